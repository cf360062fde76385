-- dlock_pg_xact_lock() got the lock (xact.c): the caller's lock_timeout
-- back (RELEASE SAVEPOINT kept ours).  $1 the old value.
SELECT set_config('lock_timeout', $1, true)
