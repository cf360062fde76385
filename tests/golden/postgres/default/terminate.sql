SELECT pg_terminate_backend(t.backend_pid) FROM dlock_held t WHERE
t.name = $1 AND (NOT $2::boolean OR NOT t.shared) AND t.expires_at
<= clock_timestamp() AND t.backend_pid <> pg_backend_pid() AND NOT
EXISTS (SELECT 1 FROM dlock_held o WHERE o.name = $1 AND
o.backend_pid = t.backend_pid AND o.expires_at > clock_timestamp())
AND
EXISTS (SELECT 1 FROM pg_locks p WHERE p.pid = t.backend_pid AND
p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND
p.database = (SELECT oid FROM pg_database WHERE datname =
current_database()) AND ((p.classid::bigint << 32) |
p.objid::bigint)
= hashtextextended($1::text, 0))
