SELECT COUNT(*) FROM "app_locks_boot"
