START TRANSACTION; UPDATE `shared_locks_runs` SET end_ms = CAST(FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000) AS SIGNED), result = %d, status = %d WHERE name = %s AND fence = %llu; COMMIT
