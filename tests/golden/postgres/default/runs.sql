SELECT name, fence, host, pid, start_ms, coalesce(end_ms, 0), result,
status FROM dlock_runs WHERE name = $1 ORDER BY fence DESC LIMIT
$2::integer
