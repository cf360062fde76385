-- Lease mode's acquire, one round trip: three statements in one implicit
-- transaction, so a query of its own (its parameters inlined as
-- literals, the store's one exception: docs/internals.md).  The first
-- two lock the name's fence row, so acquirers of a name queue there; the
-- third (a new snapshot, READ COMMITTED) sees every row committed before
-- it and decides.  SET LOCAL: no bitmap scans in this transaction only
-- (a plain index scan marks the dead rows of the name it steps on, a
-- bitmap scan revisits them at every acquire until autovacuum:
-- postgres.md), nothing a pooler could leak.  $1 name, $2 owner, $3
-- shared, $4 ttl ms, $5 host, $6 pid (as session mode's acquire).  The
-- third column says the largest limit of the live rows (a semaphore's).
SET LOCAL enable_bitmapscan = off;
INSERT INTO dlock_fences AS x (name, fence) VALUES ($1, 0) ON
CONFLICT (name) DO UPDATE SET fence = x.fence;
WITH del AS (DELETE FROM dlock_locks WHERE name = $1 AND expires_at
<= clock_timestamp()), c AS (SELECT count(*) AS n,
max(ceil(extract(epoch FROM expires_at - clock_timestamp()) *
1000)::bigint) AS left_ms FROM dlock_locks WHERE name = $1 AND
expires_at > clock_timestamp() AND (NOT $3::boolean OR NOT shared)),
lim AS (SELECT max(lim) AS hi FROM dlock_locks WHERE name = $1 AND
expires_at > clock_timestamp()), f AS (UPDATE dlock_fences SET fence
= fence + 1 WHERE name = $1 AND (SELECT n FROM c) = 0 RETURNING
fence), i AS (INSERT INTO dlock_locks (name, owner, shared, fence,
backend_pid, host, pid, expires_at, acquired_at) SELECT $1, $2,
$3::boolean, f.fence, 0, $5, $6::bigint, clock_timestamp() +
$4::bigint * interval '1 millisecond', clock_timestamp() FROM f
RETURNING fence) SELECT (SELECT fence FROM i), (SELECT left_ms FROM
c), (SELECT hi FROM lim)
