DELETE FROM dlock_locks WHERE name = ?1
