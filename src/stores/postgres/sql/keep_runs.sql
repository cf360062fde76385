-- keep_runs (runs.c), one round trip: two statements in one implicit
-- transaction (parameters inlined as literals, as run_begin.sql).  The
-- first records the setting in the name's summary row (creating it),
-- locking the row as every run_begin does, so no run of the name comes
-- between; the second, on a new snapshot that sees every run committed
-- before, counts the name's runs afresh (a count an older client put
-- out of step comes right here), drops those over the setting, oldest
-- first (from the low end of the primary key (name, fence), deleted by
-- their row ids), and records what is left as the row's count
-- (uncounted 0: counted just now).  $1 the name, $2 the runs to keep
-- (1..DLOCK_RUNS_KEPT_MAX, checked by the core).  Answers one row: the
-- runs kept.
INSERT INTO dlock_run_names AS x (name, keep_runs) VALUES ($1,
$2::integer) ON CONFLICT (name) DO UPDATE SET keep_runs =
excluded.keep_runs;
WITH c AS (SELECT count(*) AS kept FROM dlock_runs WHERE name = $1),
w AS (SELECT array_agg(ctid) AS tids FROM (SELECT ctid FROM dlock_runs
WHERE name = $1 ORDER BY fence LIMIT (SELECT greatest(c.kept -
$2::integer, 0) FROM c)) w1),
t AS (DELETE FROM dlock_runs r WHERE r.ctid = ANY ((SELECT tids FROM
w)::tid[]) AND r.name = $1 RETURNING 1),
n AS (SELECT fence FROM dlock_runs WHERE name = $1 ORDER BY fence DESC
LIMIT 1)
UPDATE dlock_run_names x SET kept_runs = c.kept - (SELECT count(*) FROM
t), kept_fence = (SELECT fence FROM n), uncounted = 0 FROM c WHERE
x.name = $1
RETURNING x.kept_runs
