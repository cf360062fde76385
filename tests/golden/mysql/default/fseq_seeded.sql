SELECT COUNT(*) FROM `shared_locks_boot`
