SELECT pg_terminate_backend(p.pid) FROM pg_locks p WHERE p.pid =
ANY($2::int[]) AND p.pid <> pg_backend_pid() AND
p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND
p.database = (SELECT oid FROM pg_database WHERE datname =
current_database()) AND ((p.classid::bigint << 32) |
p.objid::bigint)
= hashtextextended($1::text, 0)
