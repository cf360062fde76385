-- The renew thread's batch (renew.c): one UPDATE of every lock in it and
-- the SELECT that reads back which it renewed, in one round trip.  Each
-- %s%s is the batch's join (renew_join.sql) and WHERE (renew_where.sql).
SET @dlock_now = {{nowms}}; UPDATE {{table}}%s SET l.expires_ms = @dlock_now + b.ms, l.created = UNIX_TIMESTAMP(), l.ttl = b.s%s AND {{expires}} > {{nowms}}; SELECT b.i FROM {{table}}%s%s AND l.expires_ms = @dlock_now + b.ms AND l.expires_ms > {{nowms}}
