ROLLBACK TO SAVEPOINT dlock_xact_lock;
RELEASE SAVEPOINT dlock_xact_lock
