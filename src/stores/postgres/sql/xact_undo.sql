-- dlock_pg_xact_lock() did not get the lock (xact.c): back to before it,
-- the caller's transaction still usable.
ROLLBACK TO SAVEPOINT dlock_xact_lock;
RELEASE SAVEPOINT dlock_xact_lock
