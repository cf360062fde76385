SELECT count(*), max(ceil(extract(epoch FROM t.expires_at -
clock_timestamp()) * 1000)::bigint) FILTER (WHERE t.expires_at >
clock_timestamp()), count(*) FILTER (WHERE t.expires_at <=
clock_timestamp()), max(t.host), max(t.pid), max(t.backend_pid),
max(t.lim) FROM dlock_held t WHERE t.name = $1 AND (NOT $2::boolean
OR NOT t.shared) AND
EXISTS (SELECT 1 FROM pg_locks p WHERE p.pid = t.backend_pid AND
p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND
p.database = (SELECT oid FROM pg_database WHERE datname =
current_database()) AND ((p.classid::bigint << 32) |
p.objid::bigint)
= hashtext($1::text)::bigint)
