-- The last run of each name under a prefix (runs.c).  $1 a LIKE
-- pattern: the prefix with ! % _ escaped by !, then %.  The name column
-- is in the "C" collation: the pattern's fixed start is a range of the
-- primary key.
SELECT DISTINCT ON (name) name, fence, host, pid, start_ms,
coalesce(end_ms, 0), result, status FROM dlock_runs WHERE name LIKE $1
ESCAPE '!' ORDER BY name, fence DESC
