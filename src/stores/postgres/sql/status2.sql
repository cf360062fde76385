-- A name's highest fence known, how many sessions hold its key, and
-- whether all of them hold it shared (Q_STATUS2); then one of those
-- sessions (the lowest pid) as the server reports it, for a holder that
-- is not dlock: its backend pid, login and client address ("ADDR:PORT",
-- "local" for a socket; NULL where this login may not see it: another
-- role's address needs pg_read_all_stats).  $1 name.
SELECT greatest((SELECT max(fence) FROM dlock_held WHERE name = $1),
(SELECT fence FROM dlock_fences WHERE name = $1)), (SELECT count(*)
FROM pg_locks p WHERE
-- @include part-keymatch.sql
= {{key}}), coalesce((SELECT bool_and(p.mode = 'ShareLock') FROM
pg_locks p WHERE
-- @include part-keymatch.sql
= {{key}}), false), o.pid, o.usename, o.addr FROM (SELECT 1) AS one
LEFT JOIN (SELECT p.pid, a.usename::text, CASE WHEN a.client_port = -1
THEN 'local' ELSE host(a.client_addr) || ':' || a.client_port END FROM
pg_locks p LEFT JOIN pg_stat_activity a ON a.pid = p.pid WHERE
-- @include part-keymatch.sql
= {{key}} ORDER BY p.pid LIMIT 1) AS o (pid, usename, addr) ON true
