-- kept_runs (runs.c): name $1's keep setting, NULL when it has none (or
-- none dlock could have written: runs.c answers DLOCK_RUNS_KEPT then, and
-- the core bounds the rest).
SELECT keep_runs FROM (SELECT
-- @include part-keep-cols.sql
FROM dlock_run_names WHERE name = $1) k
