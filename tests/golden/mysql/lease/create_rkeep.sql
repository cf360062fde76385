CREATE TABLE IF NOT EXISTS `shared_locks_rkeep` (   -- run records: how many a name keeps
    name       VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,  -- the lock's key
    full_name  VARBINARY(1024) NOT NULL,
    keep_runs  INT NOT NULL,             -- 1..DLOCK_RUNS_KEPT_MAX
    kept_runs  INT NOT NULL,             -- its runs in the run table now
    kept_at    BIGINT UNSIGNED NOT NULL, -- the summary's last_fence then
    uncounted  INT NOT NULL DEFAULT 0    -- runs begun since the last COUNT(*)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
