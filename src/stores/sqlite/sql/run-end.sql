-- run-end.sql - how run (?1 name, ?2 fence) ended: result ?3
-- (dlock_run_result), exit status or signal ?4, end ?5 (Unix ms).
UPDATE dlock_runs SET result = ?3, status = ?4, end_ms = ?5 WHERE name = ?1 AND fence = ?2
