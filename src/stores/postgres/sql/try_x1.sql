-- The uncontended exclusive try on a session of the lock's own (Q_TRY_X1),
-- without the tidying of other sessions' rows of the name: one index
-- probe less, and no row locks.  Stale rows (of sessions that died
-- holding the name) are harmless to it: the primary key is (name,
-- owner), every reader of rows also asks pg_locks whether the row's
-- backend holds the key, and terminate.sql never picks a backend that
-- has a live row of the name (a dead holder's pid reused by the live
-- one).  They are tidied by try_x.sql, which a session sends instead at
-- least every TIDY_MS (session code), by shared tries, waits and
-- semaphores.  Its session is fresh from the pool, holds no key and has
-- no row (its id is new): no check of its own rows either.
-- Parameters as try_x.sql.
WITH l AS (SELECT pg_try_advisory_lock({{key}}) AS got WHERE
$7::bigint = 0 AND NOT $3::boolean)
-- @include part-fence-row.sql
SELECT l.got, (SELECT fence FROM i){{extra}} FROM l
