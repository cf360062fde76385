START TRANSACTION; UPDATE `shared_locks_runs` SET end_ms = CAST(FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000) AS SIGNED), result = ?, status = ? WHERE name = ? AND fence = ?; COMMIT
