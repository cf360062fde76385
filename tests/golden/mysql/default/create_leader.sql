CREATE TABLE IF NOT EXISTS `shared_locks_leader` (   -- leader values (elections)
    name      VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,  -- the lock's key
    full_name VARBINARY(1024) NOT NULL,
    fence     BIGINT UNSIGNED NOT NULL, -- the term
    value     TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL  -- at most 4096 bytes
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
