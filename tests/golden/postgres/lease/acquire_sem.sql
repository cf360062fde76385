SET LOCAL enable_bitmapscan = off;
INSERT INTO dlock_fences AS x (name, fence) VALUES (%s, 0) ON
CONFLICT (name) DO UPDATE SET fence = x.fence;
WITH del AS (DELETE FROM dlock_locks WHERE name = %s AND expires_at
<= clock_timestamp()), c AS (SELECT count(*) AS n,
min(ceil(extract(epoch FROM expires_at - clock_timestamp()) *
1000)::bigint) AS left_ms, min(lim) AS lo, max(lim) AS hi FROM
dlock_locks WHERE name = %s AND expires_at > clock_timestamp()), f AS
(UPDATE dlock_fences SET fence = fence + 1 WHERE name = %s AND
(SELECT n < %u AND coalesce(lo, %u) = %u AND coalesce(hi, %u) = %u
FROM c) RETURNING fence), i AS (INSERT INTO dlock_locks (name, owner,
shared, fence, backend_pid, host, pid, expires_at, acquired_at, lim)
SELECT %s, '%s', false, f.fence, 0, %s, %s::bigint, clock_timestamp()
+ %s::bigint * interval '1 millisecond', clock_timestamp(), %u FROM f
RETURNING fence) SELECT (SELECT fence FROM i), (SELECT left_ms FROM
c), (SELECT CASE WHEN lo <> %u THEN lo ELSE hi END FROM c)
