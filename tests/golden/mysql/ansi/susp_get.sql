SELECT by_whom, since_ms, reason FROM "app_locks_susp" WHERE name = ? AND full_name = ?
