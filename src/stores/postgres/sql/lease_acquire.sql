-- Lease mode's acquire, one round trip: a printf format (%s: SQL
-- literals the client quotes), two statements in one implicit
-- transaction.  The first locks the name's fence row, so acquirers of a
-- name queue there; the second (a new snapshot, READ COMMITTED) sees
-- every row committed before it and decides.  Literals, not parameters:
-- a multi-statement query cannot take them, and poolers in transaction
-- mode cannot follow prepared statements.  SET LOCAL: no bitmap scans in
-- this transaction only (a plain index scan marks the dead rows of the
-- name it steps on, a bitmap scan revisits them at every acquire until
-- autovacuum: postgres.md), nothing a pooler could leak.  Arguments:
-- name, name, name, shared, name, name, name, owner, shared, host, pid,
-- ttl ms.  The third column says the largest limit of the live rows (a
-- semaphore's).
SET LOCAL enable_bitmapscan = off;
INSERT INTO dlock_fences AS x (name, fence) VALUES (%s, 0) ON
CONFLICT (name) DO UPDATE SET fence = x.fence;
WITH del AS (DELETE FROM dlock_locks WHERE name = %s AND expires_at
<= clock_timestamp()), c AS (SELECT count(*) AS n,
max(ceil(extract(epoch FROM expires_at - clock_timestamp()) *
1000)::bigint) AS left_ms FROM dlock_locks WHERE name = %s AND
expires_at > clock_timestamp() AND (NOT %s OR NOT shared)), lim AS
(SELECT max(lim) AS hi FROM dlock_locks WHERE name = %s AND
expires_at > clock_timestamp()), f AS (UPDATE dlock_fences SET fence
= fence + 1 WHERE name = %s AND (SELECT n FROM c) = 0 RETURNING
fence), i AS (INSERT INTO dlock_locks (name, owner, shared, fence,
backend_pid, host, pid, expires_at, acquired_at) SELECT %s, '%s', %s,
f.fence, 0, %s, %s::bigint, clock_timestamp() + %s::bigint * interval
'1 millisecond', clock_timestamp() FROM f RETURNING fence) SELECT
(SELECT fence FROM i), (SELECT left_ms FROM c), (SELECT hi FROM lim)
