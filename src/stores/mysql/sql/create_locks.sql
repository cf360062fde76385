-- The lock table (schema.c: create_tables(), and `dlock init --print`).
-- {{engine}}: MEMORY in session mode, InnoDB in lease mode (see
-- ddl_engine() in sql.c for why).  Its columns are those of
-- its-mieger/mysql-shared-locks' shared_locks (name .. lock_acquired)
-- and dlock's own (owner ..); the inline comments are sent as they are.
CREATE TABLE IF NOT EXISTS {{table}} (
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
    UNIQUE KEY {{index}} (name)
) ENGINE={{engine}} DEFAULT CHARSET=utf8mb4
