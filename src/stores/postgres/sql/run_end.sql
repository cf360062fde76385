-- run_end (runs.c).  $1 name, $2 fence, $3 result, $4 status.  A success
-- marks the name's summary, a run's own or a later one's; an end that
-- finds the run dropped (too old) still counts as a success.
WITH t AS (SELECT
-- @include part-now-ms.sql
AS ms),
r AS (UPDATE dlock_runs SET end_ms = t.ms, result = $3::smallint, status
= $4::integer FROM t WHERE name = $1 AND fence = $2::bigint RETURNING
1),
s AS (UPDATE dlock_run_names x SET succeeded_fence = $2::bigint,
succeeded_ms = t.ms FROM t WHERE x.name = $1 AND $3::integer = 1 AND
$4::integer = 0 AND (x.succeeded_fence IS NULL OR x.succeeded_fence <=
$2::bigint) RETURNING 1)
SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM s)
