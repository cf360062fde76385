-- Fragment, shared locks only: a semaphore's holders hold the name's key
-- shared too, and the semaphore key hashtextextended(name, -1) as well.
-- Having taken the key (l), a shared acquire looks for the semaphore key
-- in pg_locks and, if someone holds it, lets the key go again (u) and
-- reports it not got (m; its holders then say the limit in force).  The
-- semaphore's admission takes the semaphore key before it looks for
-- holders of the name's key without it, so of two that race at least
-- one sees the other.
, m AS (SELECT CASE WHEN l.got THEN NOT EXISTS (SELECT 1 FROM
pg_locks p WHERE
-- @include part-keymatch.sql
= hashtextextended($1::text, -1)) ELSE false END AS got FROM l
OFFSET 0), u AS (SELECT pg_advisory_unlock_shared({{key}}) FROM l, m
WHERE l.got AND NOT m.got)
