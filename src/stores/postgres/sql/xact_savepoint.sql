-- dlock_pg_xact_lock()'s savepoint of its own (xact.c): a lock timeout
-- then aborts only it, and its set_config(lock_timeout) goes with it.
SAVEPOINT dlock_xact_lock
