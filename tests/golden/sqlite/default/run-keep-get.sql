SELECT keep, kept FROM dlock_run_keep WHERE name = ?1
