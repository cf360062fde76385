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
= hashtextextended($1::text, 0)), false)
