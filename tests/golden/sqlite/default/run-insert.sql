INSERT OR REPLACE INTO dlock_runs (name, fence, host, pid, start_ms, end_ms, result, status) VALUES (?1, ?2, ?3, ?4, ?5, 0, 0, -1)
