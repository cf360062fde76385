SELECT name, fence, host, pid, start_ms, end_ms, result, status FROM dlock_runs WHERE name = ?1 ORDER BY fence DESC LIMIT ?2
