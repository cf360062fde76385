-- Fragment: if {{got}} got the key, the fence (f) and our row (i),
-- shared {{shared}}.  The fence is the sequence's value as it is when it
-- is at least {{fence_min}} and half a block below the session's copy of
-- the durable ceiling (no table read, no write); otherwise
-- dlock_fence_raise_v1 (ddl.sql) reads the ceiling, re-seeds the sequence
-- after a crash and raises the ceiling, durably, in this statement's
-- transaction, before the fence is returned.
, f AS (SELECT CASE WHEN s.v >= {{fence_min}} AND s.v < nullif(
current_setting({{fence_guc}}, true), '')::bigint - {{fence_half}}
THEN s.v ELSE dlock_fence_raise_v1(s.v) END AS fence FROM (SELECT
nextval('dlock_fence_seq') AS v FROM {{got}} WHERE {{got}}.got OFFSET 0)
s)
, i AS (INSERT INTO dlock_held (name, owner, shared, fence,
backend_pid, sess, host, pid, expires_at, acquired_at) SELECT $1, $2,
{{shared}}, f.fence, pg_backend_pid(), $8::bigint, $5, $6::bigint,
clock_timestamp() + $4::bigint * interval '1 millisecond',
clock_timestamp() FROM f RETURNING fence)
