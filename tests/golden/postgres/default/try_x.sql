WITH l AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM dlock_held t
WHERE t.name = $1 AND t.sess = $8::bigint AND (NOT $3::boolean OR
NOT t.shared)) THEN false ELSE pg_try_advisory_lock(hashtextextended($1::text, 0)) END AS got
WHERE $7::bigint = 0)
, d AS (DELETE FROM dlock_held WHERE ctid IN (SELECT t.ctid FROM
dlock_held t WHERE (SELECT got FROM l) AND t.name = $1 AND
t.sess <> $8::bigint AND (NOT $3::boolean OR NOT t.shared OR
t.expires_at <= clock_timestamp() OR NOT
EXISTS (SELECT 1 FROM pg_locks p WHERE p.pid = t.backend_pid AND
p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND
p.database = (SELECT oid FROM pg_database WHERE datname =
current_database()) AND ((p.classid::bigint << 32) |
p.objid::bigint)
= hashtextextended($1::text, 0))
) FOR UPDATE OF t SKIP LOCKED))
, f AS (SELECT CASE WHEN s.v >= 1000000000000000 AND s.v < nullif(
current_setting('dlock.fence_ceiling_' || pg_backend_pid(), true), '')::bigint - 524288
THEN s.v ELSE dlock_fence_raise_v1(s.v) END AS fence FROM (SELECT
nextval('dlock_fence_seq') AS v FROM l WHERE l.got OFFSET 0)
s)
, i AS (INSERT INTO dlock_held (name, owner, shared, fence,
backend_pid, sess, host, pid, expires_at, acquired_at) SELECT $1, $2,
$3::boolean, f.fence, pg_backend_pid(), $8::bigint, $5, $6::bigint,
clock_timestamp() + $4::bigint * interval '1 millisecond',
clock_timestamp() FROM f RETURNING fence)
SELECT l.got, (SELECT fence FROM i), CASE WHEN l.got THEN NULL ELSE (SELECT CASE WHEN
bool_or(t.expires_at <= clock_timestamp()) THEN -1 ELSE
max(ceil(extract(epoch FROM t.expires_at - clock_timestamp()) *
1000))::bigint END FROM dlock_held t WHERE t.name = $1) END
 FROM l
