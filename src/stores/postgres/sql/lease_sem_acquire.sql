-- Lease mode's semaphores, as lease_acquire.sql: admitted while fewer
-- than the limit live rows hold the name and all of them asked the same
-- limit.  $1 name, $2 owner, $3 ttl ms, $4 host, $5 pid, $6 the limit.
SET LOCAL enable_bitmapscan = off;
INSERT INTO dlock_fences AS x (name, fence) VALUES ($1, 0) ON
CONFLICT (name) DO UPDATE SET fence = x.fence;
WITH del AS (DELETE FROM dlock_locks WHERE name = $1 AND expires_at
<= clock_timestamp()), c AS (SELECT count(*) AS n,
min(ceil(extract(epoch FROM expires_at - clock_timestamp()) *
1000)::bigint) AS left_ms, min(lim) AS lo, max(lim) AS hi FROM
dlock_locks WHERE name = $1 AND expires_at > clock_timestamp()), f AS
(UPDATE dlock_fences SET fence = fence + 1 WHERE name = $1 AND
(SELECT n < $6::integer AND coalesce(lo, $6::integer) = $6::integer
AND coalesce(hi, $6::integer) = $6::integer FROM c) RETURNING fence),
i AS (INSERT INTO dlock_locks (name, owner, shared, fence,
backend_pid, host, pid, expires_at, acquired_at, lim) SELECT $1, $2,
false, f.fence, 0, $4, $5::bigint, clock_timestamp() + $3::bigint *
interval '1 millisecond', clock_timestamp(), $6::integer FROM f
RETURNING fence) SELECT (SELECT fence FROM i), (SELECT left_ms FROM
c), (SELECT CASE WHEN lo <> $6::integer THEN lo ELSE hi END FROM c)
