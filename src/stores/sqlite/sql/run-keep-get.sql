-- run-keep-get.sql - name ?1's keep setting and how many runs it keeps
-- now (dlock_keep_runs()); no row: DLOCK_RUNS_KEPT, and the runs are
-- counted once (run-count.sql).
SELECT keep, kept FROM dlock_run_keep WHERE name = ?1
