-- Run records (runs.c): how many runs each name keeps (dlock_keep_runs();
-- no row: DLOCK_RUNS_KEPT) and how many it holds now, so that a run drops
-- the oldest over the setting without counting them.  kept_at: the
-- summary's last fence when kept_runs was right (a run of an older dlock,
-- which trims to 20 by itself and never writes here, moves the summary
-- on: the next run counts again, once).  uncounted: runs begun since
-- they were last counted; the run that brings it to keep_runs counts
-- them again (a count put wrong by hand comes right within keep_runs
-- runs, at a flat cost per run).
CREATE TABLE IF NOT EXISTS {{rkeep}} (   -- run records: how many a name keeps
    name       VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,  -- the lock's key
    full_name  VARBINARY(1024) NOT NULL,
    keep_runs  INT NOT NULL,             -- 1..DLOCK_RUNS_KEPT_MAX
    kept_runs  INT NOT NULL,             -- its runs in the run table now
    kept_at    BIGINT UNSIGNED NOT NULL, -- the summary's last_fence then
    uncounted  INT NOT NULL DEFAULT 0    -- runs begun since the last COUNT(*)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
