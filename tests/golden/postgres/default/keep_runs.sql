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
