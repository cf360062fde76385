-- The MEMORY table's size is capped when it is created:
SET SESSION max_heap_table_size = 1073741824;
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
) ENGINE=MEMORY DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS "app_locks_fences" (
    name  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    fence BIGINT UNSIGNED NOT NULL  -- highest fence handed out
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS "app_locks_seq" (
    name  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    fence BIGINT UNSIGNED NOT NULL  -- highest fence handed out
) ENGINE=MyISAM DEFAULT CHARSET=utf8mb4;
-- MariaDB 10.3 and later, on a MEMORY lock table: the fences of both modes (a MyISAM or
-- InnoDB lock table, or MySQL: the counters above)
CREATE SEQUENCE IF NOT EXISTS "app_locks_fseq" CACHE 1000;
CREATE TABLE IF NOT EXISTS "app_locks_boot" (
    id TINYINT NOT NULL PRIMARY KEY -- 1: "app_locks_fseq" is seeded since the server started
) ENGINE=MEMORY;
-- Run records (dlock run --once, --once-per, dlock history)
CREATE TABLE IF NOT EXISTS "app_locks_runs" (   -- run records: the kept runs
    name      VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,  -- the lock's key
    fence     BIGINT UNSIGNED NOT NULL, -- the run's lock
    full_name VARBINARY(1024) NOT NULL,
    host      VARCHAR(255) CHARACTER SET utf8mb4 NOT NULL,
    pid       BIGINT NOT NULL,
    start_ms  BIGINT NOT NULL,          -- unix ms, server clock
    end_ms    BIGINT NULL,
    result    TINYINT NOT NULL,  -- 0 running, 1 exited, 2 signaled, 3 lost, 4 abandoned
    status    INT NOT NULL,      -- exit status, signal, or -1
    PRIMARY KEY (name, fence)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS "app_locks_runsum" (   -- run records: per name
    name          VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    full_name     VARBINARY(1024) NOT NULL,
    last_start_ms BIGINT NOT NULL,          -- unix ms, server clock
    last_fence    BIGINT UNSIGNED NOT NULL,
    ok_fence      BIGINT UNSIGNED NULL      -- a run that succeeded
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS "app_locks_rkeep" (   -- run records: how many a name keeps
    name       VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,  -- the lock's key
    full_name  VARBINARY(1024) NOT NULL,
    keep_runs  INT NOT NULL,             -- 1..DLOCK_RUNS_KEPT_MAX
    kept_runs  INT NOT NULL,             -- its runs in the run table now
    kept_at    BIGINT UNSIGNED NOT NULL, -- the summary's last_fence then
    uncounted  INT NOT NULL DEFAULT 0    -- runs begun since the last COUNT(*)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
-- Leader values (dlock_elect, dlock_proclaim, dlock_leader)
CREATE TABLE IF NOT EXISTS "app_locks_leader" (   -- leader values (elections)
    name      VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,  -- the lock's key
    full_name VARBINARY(1024) NOT NULL,
    fence     BIGINT UNSIGNED NOT NULL, -- the term
    value     TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL  -- at most 4096 bytes
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
-- Suspended jobs (dlock_suspend, dlock_resume, dlock_suspensions)
CREATE TABLE IF NOT EXISTS "app_locks_susp" (   -- suspended jobs
    name      VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,  -- the lock's key
    full_name VARBINARY(1024) NOT NULL,
    by_whom   VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,  -- USER@HOST, at most 255 bytes
    since_ms  BIGINT NOT NULL,          -- unix ms, server clock
    reason    TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL  -- at most 1024 bytes, may be ''
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
-- Without the fence sequence (MySQL, MariaDB < 10.3), session mode's two
-- statements per lock (optional; needs CREATE ROUTINE once, then EXECUTE):
DELIMITER //
CREATE PROCEDURE "app_locks_acq2"(p_key VARCHAR(64) CHARACTER SET utf8mb4, p_full VARBINARY(1024), p_owner CHAR(32) CHARACTER SET ascii, p_ttl_ms BIGINT, p_host VARCHAR(255) CHARACTER SET utf8mb4, p_pid BIGINT)
    MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
    DECLARE v_got INT DEFAULT 0;
    DECLARE v_fence BIGINT UNSIGNED DEFAULT 0;
    DECLARE EXIT HANDLER FOR 1062 SELECT 2, 0;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        IF v_got = 1 THEN
            DELETE FROM "app_locks" WHERE name = p_key AND owner = p_owner;
            DO RELEASE_LOCK(p_key);
        END IF;
        RESIGNAL;
    END;
    SET v_got = IFNULL(GET_LOCK(p_key, 0), 0);
    IF v_got <> 1 THEN
        SELECT 0, 0;
    ELSE
        INSERT INTO "app_locks" (name, connection_id, created, ttl, lock_acquired, owner, expires_ms, acquired_ms, host, pid, full_name)
            VALUES (p_key, CONNECTION_ID(), UNIX_TIMESTAMP(), (p_ttl_ms + 999) DIV 1000, 1, p_owner, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + p_ttl_ms, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), p_host, p_pid, p_full);
        INSERT INTO "app_locks_seq" (name, fence) VALUES (p_key, LAST_INSERT_ID(CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS UNSIGNED))) ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence + 1, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS UNSIGNED)));
        SET v_fence = LAST_INSERT_ID();
        UPDATE "app_locks" SET fence = v_fence WHERE name = p_key AND owner = p_owner;
        SELECT 1, v_fence;
    END IF;
END
//
CREATE PROCEDURE "app_locks_rel1"(p_key VARCHAR(64) CHARACTER SET utf8mb4, p_owner CHAR(32) CHARACTER SET ascii)
    MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
    DECLARE v_n INT DEFAULT 0;
    DELETE FROM "app_locks" WHERE name = p_key AND owner = p_owner AND COALESCE(expires_ms, (created + ttl + 1) * 1000) > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AND connection_id = CONNECTION_ID() AND IS_USED_LOCK(p_key) = CONNECTION_ID();
    SET v_n = ROW_COUNT();
    IF v_n = 1 THEN
        DO RELEASE_LOCK(p_key);
    END IF;
    SELECT v_n;
END
//
DELIMITER ;
-- For a table made by its-mieger/mysql-shared-locks, instead:
-- ALTER TABLE "app_locks"
--     ADD COLUMN owner CHAR(32) CHARACTER SET ascii NULL,
--     ADD COLUMN fence BIGINT UNSIGNED NULL,
--     ADD COLUMN expires_ms BIGINT NULL,
--     ADD COLUMN acquired_ms BIGINT NULL,
--     ADD COLUMN host VARCHAR(255) CHARACTER SET utf8mb4 NULL,
--     ADD COLUMN pid BIGINT NULL,
--     ADD COLUMN full_name VARBINARY(1024) NULL,
--     ADD COLUMN lim INT NULL,
--     ADD COLUMN slot INT NULL;
-- (a table of dlock 0.2: only the last two, which a client that
-- may ALTER the table adds by itself; semaphores need them)
-- and, as its name column is latin1 (names outside latin1, such
-- as Greek, CJK or emoji, are refused until then):
-- ALTER TABLE "app_locks"
--     MODIFY name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;
-- For a session-mode table of dlock 0.1 (InnoDB: a durable
-- commit per acquire and per release):
-- ALTER TABLE "app_locks" ENGINE=MyISAM;
