-- run-count.sql - how many runs of name ?1 are kept: for a name without
-- a dlock_run_keep row (a file of an older dlock) or with a count that
-- cannot be right, when the setting changes, and once every KEEP runs
-- (what a hand edit or an older client did to the count comes right
-- then; the cost per run stays flat).
SELECT count(*) FROM dlock_runs WHERE name = ?1
