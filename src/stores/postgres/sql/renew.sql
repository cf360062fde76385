-- The renew thread's batch (renew.c): many extends in one UPDATE.
-- {{table}}: dlock_held in session mode, dlock_locks in lease mode (as
-- extend.sql).  $1 names, $2 owners, $3 leases in ms; answers the
-- 1-based positions of the rows renewed.
UPDATE {{table}} AS l SET expires_at = clock_timestamp() + b.ttl *
interval '1 millisecond' FROM unnest($1::text[], $2::text[],
$3::bigint[]) WITH ORDINALITY AS b(name, owner, ttl, i) WHERE l.name =
b.name AND l.owner = b.owner AND l.expires_at > clock_timestamp()
RETURNING b.i
