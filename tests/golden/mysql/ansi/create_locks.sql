CREATE TABLE IF NOT EXISTS "app_locks" (
    name          VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    connection_id BIGINT NOT NULL,
    created       BIGINT NOT NULL,      -- unix seconds
    ttl           BIGINT NOT NULL,      -- seconds
    lock_acquired TINYINT(1) NOT NULL,
    owner         CHAR(32) CHARACTER SET ascii NULL,
    fence         BIGINT UNSIGNED NULL,
    expires_ms    BIGINT NULL,          -- unix ms
    acquired_ms   BIGINT NULL,          -- unix ms
    host          VARCHAR(255) CHARACTER SET utf8mb4 NULL,
    pid           BIGINT NULL,
    full_name     VARBINARY(1024) NULL,
    lim           INT NULL,             -- semaphore limit (NULL: 1)
    slot          INT NULL,             -- semaphore slot
    UNIQUE KEY "app_locks_ix1" (name)
) ENGINE=MEMORY DEFAULT CHARSET=utf8mb4
