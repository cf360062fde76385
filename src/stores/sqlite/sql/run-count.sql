-- run-count.sql - how many runs of name ?1 are kept: once per name
-- without a dlock_run_keep row (a file of an older dlock), and when the
-- setting changes; never per run.
SELECT count(*) FROM dlock_runs WHERE name = ?1
