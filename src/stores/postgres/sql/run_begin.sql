-- run_begin (runs.c), one round trip: two statements in one implicit
-- transaction, so a query of its own (the one text of the store whose
-- parameters are inlined as literals: docs/internals.md).  The first
-- locks the name's summary row (creating it), only if lk's row
-- ({{table}}) is still ours and within its lease, so the run_begin of
-- every holder of a name queues there; the second, on a new snapshot
-- that sees what the previous holder committed, checks ownership again,
-- decides by the rule on the server's clock and, going ahead, writes
-- everything in one statement.  $1 the name, $2 the owner token, $3 the
-- fence, $4 the host, $5 the pid, $6 once, $7 a period given, $8 half
-- the period (ms), $9 the runs a name keeps without a setting
-- (DLOCK_RUNS_KEPT), $10 the most it may keep (DLOCK_RUNS_KEPT_MAX).
-- The runs over the name's keep_runs go by a count kept in its summary
-- row (kept_runs, valid while its newest run is still kept_fence: a
-- client older than keep_runs adds and trims runs without counting, and
-- the runs are then counted once again), oldest first, found from the
-- low end of the primary key (name, fence) and deleted by their row ids
-- (a TID scan, whatever the planner thinks of a range of fences): the
-- bookkeeping touches the newest run
-- (only it can still be RUNNING: each begin marks the one before) and
-- the ones it drops, whatever the runs kept.  The count may drift (runs
-- deleted or planted by hand, a value planted in range), so: only runs
-- below this run's fence are dropped, never the run just recorded; a
-- trim that finds fewer than it asked for (k: the count was high) counts
-- what is left, exactly; and uncounted, the begins since the last real
-- count, makes the begin that brings it to keep_runs count afresh (c:
-- fresh), so any drift is gone within keep_runs runs at a flat cost per
-- run, amortized.  Every value planted out of range is no value (the
-- default setting, a recount), never arithmetic.  Answers one
-- row: ours, go, then the run that decided a skip, or the run before
-- this one (as it is now: ABANDONED if it was RUNNING), or NULLs.  m: a
-- RUNNING run of our own fence is there already: this text was sent
-- before, committed, and its answer was lost (lease mode: the pool sends
-- it again on a new connection); that run is ours, so it goes ahead
-- again instead of skipping because of its own start.  A suspended name
-- (a row in dlock_suspensions, z) skips before any rule with nothing
-- written: the first statement then takes no summary row but holds the
-- suspension row FOR KEY SHARE, so a resume waits for this transaction
-- and the second statement still sees it; the answer's run is then
-- {fence 0, host who suspended it, start since when, result 6
-- (DLOCK_RUN_SUSPENDED), status -1}.
INSERT INTO dlock_run_names AS x (name) SELECT $1 WHERE
-- @include part-ours.sql
AND NOT EXISTS (SELECT 1 FROM dlock_suspensions WHERE name = $1 FOR KEY
SHARE) ON CONFLICT (name) DO UPDATE SET last_start_ms = x.last_start_ms;
WITH o AS (SELECT
-- @include part-ours.sql
AS ours,
-- @include part-now-ms.sql
AS now_ms),
z AS (SELECT
-- @include part-susp-cols.sql
FROM dlock_suspensions WHERE name = $1),
s AS (SELECT last_start_ms, succeeded_fence, succeeded_ms,
-- @include part-keep-cols.sql
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
