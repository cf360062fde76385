SELECT keep, kept, uncounted FROM dlock_run_keep WHERE name = ?1
