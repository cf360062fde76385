CREATE TABLE IF NOT EXISTS `shared_locks_runsum` (   -- run records: per name
    name          VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    full_name     VARBINARY(1024) NOT NULL,
    last_start_ms BIGINT NOT NULL,          -- unix ms, server clock
    last_fence    BIGINT UNSIGNED NOT NULL,
    ok_fence      BIGINT UNSIGNED NULL      -- a run that succeeded
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
