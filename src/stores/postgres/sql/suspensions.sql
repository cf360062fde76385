-- suspensions (suspend.c): every row of a name under a prefix.  $1 a
-- LIKE pattern: the prefix with ! % _ escaped by !, then % (as
-- last_runs.sql; the "C" collation makes it a range of the primary key).
SELECT name,
-- @include part-susp-cols.sql
FROM dlock_suspensions WHERE name LIKE $1 ESCAPE '!' ORDER BY name
