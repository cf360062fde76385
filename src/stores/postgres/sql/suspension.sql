-- suspension (suspend.c): name $1's row (no row: not suspended).
SELECT
-- @include part-susp-cols.sql
FROM dlock_suspensions WHERE name = $1
