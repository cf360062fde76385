INSERT INTO dlock_run_names AS x (name) SELECT $1 WHERE
EXISTS (SELECT 1 FROM dlock_held WHERE name = $1 AND owner = $2 AND
expires_at > clock_timestamp())
AND NOT EXISTS (SELECT 1 FROM dlock_suspensions WHERE name = $1 FOR KEY
SHARE) ON CONFLICT (name) DO UPDATE SET last_start_ms = x.last_start_ms;
WITH o AS (SELECT
EXISTS (SELECT 1 FROM dlock_held WHERE name = $1 AND owner = $2 AND
expires_at > clock_timestamp())
AS ours,
floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
AS now_ms),
z AS (SELECT
CASE WHEN pg_typeof(by_whom) IN ('text'::regtype, 'varchar'::regtype) THEN
by_whom::text END AS by_whom, CASE WHEN pg_typeof(since_ms) IN
('bigint'::regtype, 'integer'::regtype, 'smallint'::regtype) THEN
since_ms::text::bigint END AS since_ms, CASE WHEN pg_typeof(reason) IN
('text'::regtype, 'varchar'::regtype) THEN reason::text END AS reason
FROM dlock_suspensions WHERE name = $1),
s AS (SELECT last_start_ms, succeeded_fence, succeeded_ms,
CASE WHEN pg_typeof(keep_runs) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN keep_runs::text::bigint END AS keep_runs, CASE
WHEN pg_typeof(kept_runs) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN kept_runs::text::bigint END AS kept_runs, CASE
WHEN pg_typeof(kept_fence) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN kept_fence::text::bigint END AS kept_fence,
CASE WHEN pg_typeof(uncounted) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN uncounted::text::bigint END AS uncounted
FROM dlock_run_names WHERE name = $1),
m AS (SELECT EXISTS (SELECT 1 FROM dlock_runs WHERE name = $1 AND
fence = $3::bigint AND result = 0) AS again),
g AS (SELECT o.ours, o.now_ms, coalesce($6::boolean AND
s.succeeded_fence IS NOT NULL AND NOT m.again, false) AS by_once,
coalesce($7::boolean AND o.now_ms - s.last_start_ms < $8::bigint AND
NOT m.again, false) AS by_period FROM o CROSS JOIN m LEFT JOIN s ON
true),
d AS (SELECT g.*, g.ours AND NOT g.by_once AND NOT g.by_period AND NOT
EXISTS (SELECT 1 FROM z) AS go FROM g),
p AS (SELECT fence, host, pid, start_ms, end_ms, result, status FROM
dlock_runs WHERE name = $1 AND fence <> $3::bigint ORDER BY fence DESC
LIMIT 1),
n AS (SELECT (SELECT fence FROM dlock_runs WHERE name = $1 ORDER BY
fence DESC LIMIT 1) AS fence, EXISTS (SELECT 1 FROM dlock_runs WHERE
name = $1 AND fence = $3::bigint) AS have),
k AS (SELECT coalesce(CASE WHEN s.keep_runs BETWEEN 1 AND $10::integer
THEN s.keep_runs END, $9::integer) AS keep, CASE WHEN s.kept_runs BETWEEN
0 AND $10::integer AND s.kept_fence = n.fence THEN s.kept_runs END AS
kept, CASE WHEN s.uncounted BETWEEN 0 AND $10::integer THEN s.uncounted +
1 END AS uncounted, CASE WHEN n.have THEN 0 ELSE 1 END AS adds FROM n
LEFT JOIN s ON true),
c AS (SELECT keep, adds, CASE WHEN fresh THEN 0 ELSE uncounted END AS
uncounted, CASE WHEN fresh THEN (SELECT count(*) FROM dlock_runs WHERE
name = $1) ELSE kept END + adds AS kept FROM (SELECT k.*, k.kept IS NULL
OR k.uncounted IS NULL OR k.uncounted >= k.keep AS fresh FROM k) k2),
q AS (SELECT CASE WHEN d.go THEN greatest(c.kept - c.keep, 0) ELSE 0
END AS want FROM d, c),
w AS (SELECT max(fence) AS upto, array_agg(ctid) AS tids FROM (SELECT
ctid, fence FROM dlock_runs WHERE name = $1 AND fence < $3::bigint ORDER
BY fence LIMIT (SELECT want FROM q)) w1),
a AS (UPDATE dlock_runs r SET result = 4 FROM d, p, w WHERE d.go AND
r.name = $1 AND r.fence = p.fence AND r.result = 0 AND (w.upto IS NULL
OR r.fence > w.upto)),
t AS (DELETE FROM dlock_runs r WHERE r.ctid = ANY ((SELECT tids FROM
w)::tid[]) AND r.name = $1 AND r.fence < $3::bigint RETURNING 1),
e AS (SELECT count(*) AS gone FROM t),
i AS (INSERT INTO dlock_runs (name, fence, host, pid, start_ms, end_ms,
result, status) SELECT $1, $3::bigint, $4, $5::bigint, d.now_ms, NULL,
0, -1 FROM d WHERE d.go ON CONFLICT (name, fence) DO UPDATE SET host =
excluded.host, pid = excluded.pid, start_ms = excluded.start_ms, end_ms
= NULL, result = 0, status = -1),
u AS (UPDATE dlock_run_names x SET last_start_ms = d.now_ms, kept_runs
= CASE WHEN e.gone < q.want THEN (SELECT count(*) FROM dlock_runs WHERE
name = $1) + c.adds ELSE c.kept END - e.gone, uncounted = CASE WHEN
e.gone < q.want THEN 0 ELSE c.uncounted END, kept_fence =
greatest(n.fence, $3::bigint) FROM d, c, n, e, q WHERE d.go AND
x.name = $1),
l AS (SELECT 0 AS rank, 0::bigint AS fence, z.by_whom AS host, 0::bigint
AS pid, coalesce(z.since_ms, 0) AS start_ms, 0::bigint AS end_ms,
6::smallint AS result, -1 AS status FROM z UNION ALL SELECT 1, fence,
host, pid, start_ms, end_ms, result, status FROM dlock_runs, d WHERE
d.by_once AND name = $1 AND fence =
(SELECT succeeded_fence FROM s) UNION ALL SELECT 2, s.succeeded_fence,
'', 0, 0, s.succeeded_ms, 1, 0 FROM s, d WHERE d.by_once UNION ALL
SELECT 3, p.fence, p.host, p.pid, p.start_ms, p.end_ms, CASE WHEN d.go
AND p.result = 0 THEN 4 ELSE p.result END, p.status FROM p, d WHERE NOT
d.by_once)
SELECT d.ours, d.go, fence, host, pid, start_ms, end_ms, result, status
FROM d LEFT JOIN (SELECT * FROM l ORDER BY rank LIMIT 1) l ON true
