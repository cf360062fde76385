-- run-summary.sql - name ?1's summary row: the start of its last run, the
-- fence of its last run and of its last success (run_begin decides with
-- them whether this run goes ahead).
SELECT last_start, last_fence, ok_fence FROM dlock_run_names WHERE name = ?1
