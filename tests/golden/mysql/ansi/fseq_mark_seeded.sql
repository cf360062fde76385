INSERT IGNORE INTO "app_locks_boot" VALUES (1)
