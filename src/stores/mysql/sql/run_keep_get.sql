-- dlock_kept_runs() (runs.c, kept_fn): name's setting (key ?); no row (or
-- no table): DLOCK_RUNS_KEPT.  A value out of 1..DLOCK_RUNS_KEPT_MAX is
-- read as that too.
SELECT keep_runs FROM {{rkeep}} WHERE name = ?
