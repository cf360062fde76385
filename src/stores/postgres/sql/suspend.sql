-- suspend (suspend.c), one statement: name $1's row {by $2, now on the
-- server's clock, reason $3} if it has none, else its row as it is.
-- Answers one row: put (1: written), then the row that was there (NULLs
-- when put).  put 0 with no row: a row committed after this statement's
-- snapshot stopped the insert and is not in the snapshot (a suspend
-- racing this one), or went again: suspend.c sends it again.
WITH i AS (INSERT INTO dlock_suspensions (name, by_whom, since_ms, reason)
VALUES ($1, $2,
-- @include part-now-ms.sql
, $3) ON CONFLICT (name) DO NOTHING RETURNING 1),
e AS (SELECT true AS found,
-- @include part-susp-cols.sql
FROM dlock_suspensions WHERE name = $1)
SELECT (SELECT count(*) FROM i), e.found, e.by_whom, e.since_ms, e.reason
FROM (SELECT 1) o LEFT JOIN e ON NOT EXISTS (SELECT 1 FROM i)
