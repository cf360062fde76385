-- run-keep-get.sql - name ?1's keep setting, how many runs it holds now,
-- and how many runs began since they were last counted
-- (dlock_keep_runs()); no row: DLOCK_RUNS_KEPT, and the runs are counted
-- (run-count.sql).
SELECT keep, kept, uncounted FROM dlock_run_keep WHERE name = ?1
