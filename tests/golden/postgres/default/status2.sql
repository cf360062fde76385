SELECT greatest((SELECT max(fence) FROM dlock_held WHERE name = $1),
(SELECT fence FROM dlock_fences WHERE name = $1)), (SELECT count(*)
FROM pg_locks p WHERE
p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND
p.database = (SELECT oid FROM pg_database WHERE datname =
current_database()) AND ((p.classid::bigint << 32) |
p.objid::bigint)
= hashtextextended($1::text, 0)), coalesce((SELECT bool_and(p.mode = 'ShareLock') FROM
pg_locks p WHERE
p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND
p.database = (SELECT oid FROM pg_database WHERE datname =
current_database()) AND ((p.classid::bigint << 32) |
p.objid::bigint)
= hashtextextended($1::text, 0)), false), o.pid, o.usename, o.addr FROM (SELECT 1) AS one
LEFT JOIN (SELECT p.pid, a.usename::text, CASE WHEN a.client_port = -1
THEN 'local' ELSE host(a.client_addr) || ':' || a.client_port END FROM
pg_locks p LEFT JOIN pg_stat_activity a ON a.pid = p.pid WHERE
p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND
p.database = (SELECT oid FROM pg_database WHERE datname =
current_database()) AND ((p.classid::bigint << 32) |
p.objid::bigint)
= hashtextextended($1::text, 0) ORDER BY p.pid LIMIT 1) AS o (pid, usename, addr) ON true
