SELECT full_name, by_whom, since_ms, reason FROM `shared_locks_susp` ORDER BY full_name
