SELECT COUNT(*) FROM "app_locks_fseq", "app_locks_boot"
