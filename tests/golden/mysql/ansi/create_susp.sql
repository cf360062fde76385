CREATE TABLE IF NOT EXISTS "app_locks_susp" (   -- suspended jobs
    name      VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,  -- the lock's key
    full_name VARBINARY(1024) NOT NULL,
    by_whom   VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,  -- USER@HOST, at most 255 bytes
    since_ms  BIGINT NOT NULL,          -- unix ms, server clock
    reason    TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL  -- at most 1024 bytes, may be ''
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
