-- run-newest.sql - name ?1's kept runs, newest (highest fence) first, at
-- most ?2: `dlock history`, and the run before this one (?2 = 1).
SELECT name, fence, host, pid, start_ms, end_ms, result, status FROM dlock_runs WHERE name = ?1 ORDER BY fence DESC LIMIT ?2
