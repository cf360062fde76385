UPDATE dlock_runs SET result = 4 WHERE name = ?1 AND fence = ?2 AND result = 0
