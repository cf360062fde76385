DO RELEASE_LOCK('dlock-seed:shared_locks')
