SELECT DISTINCT ON (name) name, fence, host, pid, start_ms,
coalesce(end_ms, 0), result, status FROM dlock_runs WHERE name LIKE $1
ESCAPE '!' ORDER BY name, fence DESC
