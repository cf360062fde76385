-- Fragment: the pg_locks row (p) of a granted bigint advisory key in the
-- current database.  pg_locks shows such a key as classid (high half),
-- objid (low half) and objsubid 1.  The line after the include says
-- "= KEY".
p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND
p.database = (SELECT oid FROM pg_database WHERE datname =
current_database()) AND ((p.classid::bigint << 32) |
p.objid::bigint)
