-- The renew thread's batch (renew.c): one UPDATE of every lock in it and
-- the SELECT that reads back which it renewed, in one round trip.  Each
-- {{join}}{{where}}: the batch's join (renew_join.sql) and WHERE
-- (renew_where.sql), filled per batch (docs/internals.md: the one
-- exception to filling once at open).
SET @dlock_now = {{nowms}}; UPDATE {{table}}{{join}} SET l.expires_ms = @dlock_now + b.ms, l.created = UNIX_TIMESTAMP(), l.ttl = b.s{{where}} AND {{expires}} > {{nowms}}; SELECT b.i FROM {{table}}{{join}}{{where}} AND l.expires_ms = @dlock_now + b.ms AND l.expires_ms > {{nowms}}
