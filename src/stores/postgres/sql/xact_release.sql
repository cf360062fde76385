-- dlock_pg_xact_lock() got the lock (xact.c): its savepoint goes, the
-- lock stays with the transaction.
RELEASE SAVEPOINT dlock_xact_lock
