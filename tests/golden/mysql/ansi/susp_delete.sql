START TRANSACTION; SELECT by_whom, since_ms, reason FROM "app_locks_susp" WHERE name = ? AND full_name = ? FOR UPDATE; DELETE FROM "app_locks_susp" WHERE name = ? AND full_name = ?; COMMIT
