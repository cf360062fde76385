DELETE FROM dlock_suspensions WHERE name = ?1
