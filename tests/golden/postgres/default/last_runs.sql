SELECT n.name, r.fence, r.host, r.pid, r.start_ms, coalesce(r.end_ms, 0),
r.result, r.status FROM dlock_run_names n CROSS JOIN LATERAL (SELECT
fence, host, pid, start_ms, end_ms, result, status FROM dlock_runs WHERE
name = n.name ORDER BY fence DESC LIMIT 1) r WHERE n.name LIKE $1 ESCAPE
'!' ORDER BY n.name
