SELECT name, fence, host, pid, start_ms, end_ms, result, status FROM dlock_runs WHERE name = ?1 AND fence = ?2
