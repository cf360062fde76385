-- resume (suspend.c), one statement: delete name $1's row, answering it
-- (no row: it was not suspended).
DELETE FROM dlock_suspensions WHERE name = $1 RETURNING
-- @include part-susp-cols.sql
