SELECT count(*) FROM dlock_runs WHERE name = ?1
