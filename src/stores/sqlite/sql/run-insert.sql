-- run-insert.sql - the run that goes ahead: ?1 name, ?2 fence, ?3 host,
-- ?4 pid, ?5 start (Unix ms); not ended (0), running ({{running}}:
-- DLOCK_RUN_RUNNING), no status yet (-1).
INSERT OR REPLACE INTO dlock_runs (name, fence, host, pid, start_ms, end_ms, result, status) VALUES (?1, ?2, ?3, ?4, ?5, 0, {{running}}, -1)
