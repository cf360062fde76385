UPDATE dlock_runs SET result = 4 WHERE name = ?1 AND result = 0
