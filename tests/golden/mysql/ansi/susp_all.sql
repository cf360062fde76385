SELECT full_name, by_whom, since_ms, reason FROM "app_locks_susp" ORDER BY full_name
