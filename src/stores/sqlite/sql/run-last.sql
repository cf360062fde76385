-- run-last.sql - the newest kept run of every name (`dlock list` with
-- runs; the prefix is matched in C).
SELECT r.name, r.fence, r.host, r.pid, r.start_ms, r.end_ms, r.result, r.status FROM dlock_runs r JOIN (SELECT name, MAX(fence) AS f FROM dlock_runs GROUP BY name) m ON r.name = m.name AND r.fence = m.f
