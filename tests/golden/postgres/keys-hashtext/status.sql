SELECT t.shared, t.host, t.pid, greatest(1, ceil(extract(epoch FROM
t.expires_at - clock_timestamp()) * 1000)::bigint),
floor(extract(epoch FROM t.acquired_at) * 1000)::bigint, t.lim FROM
dlock_held t WHERE t.name = $1 AND t.expires_at > clock_timestamp()
AND
EXISTS (SELECT 1 FROM pg_locks p WHERE p.pid = t.backend_pid AND
p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND
p.database = (SELECT oid FROM pg_database WHERE datname =
current_database()) AND ((p.classid::bigint << 32) |
p.objid::bigint)
= hashtext($1::text)::bigint)
