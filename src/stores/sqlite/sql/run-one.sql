-- run-one.sql - the kept run of name ?1 with fence ?2 (the one a skipped
-- run reports).  runs.c reads the columns by position, as run-newest.sql's
-- and run-last.sql's.
SELECT name, fence, host, pid, start_ms, end_ms, result, status FROM dlock_runs WHERE name = ?1 AND fence = ?2
