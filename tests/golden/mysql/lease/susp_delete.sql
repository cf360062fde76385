START TRANSACTION; SELECT by_whom, since_ms, reason FROM `shared_locks_susp` WHERE name = ? AND full_name = ? FOR UPDATE; DELETE FROM `shared_locks_susp` WHERE name = ? AND full_name = ?; COMMIT
