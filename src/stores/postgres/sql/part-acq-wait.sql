-- Fragment: a wait's lock step (l), on a session of its own: block on
-- the key for at most $7 ms (lock_timeout, this transaction only).
-- {{lock_fn}}: pg_advisory_lock or pg_advisory_lock_shared.
WITH l AS (SELECT true AS got, {{lock_fn}}({{key}}) FROM (SELECT
set_config('lock_timeout', $7::text, true) AS c OFFSET 0) s)
