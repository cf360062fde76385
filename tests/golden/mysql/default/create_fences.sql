CREATE TABLE IF NOT EXISTS `shared_locks_fences` (
    name  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    fence BIGINT UNSIGNED NOT NULL  -- highest fence handed out
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
