SELECT GET_LOCK('dlock-seed:app_locks', ?)
