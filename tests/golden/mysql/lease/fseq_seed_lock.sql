SELECT GET_LOCK('dlock-seed:shared_locks', ?)
