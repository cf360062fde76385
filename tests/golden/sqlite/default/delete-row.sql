DELETE FROM dlock_locks WHERE name = ?1 AND owner = ?2
