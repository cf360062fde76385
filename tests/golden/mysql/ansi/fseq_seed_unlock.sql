DO RELEASE_LOCK('dlock-seed:app_locks')
