CREATE TABLE IF NOT EXISTS `shared_locks` (
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
    UNIQUE KEY `shared_locks_ix1` (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS `shared_locks_fences` (
    name  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    fence BIGINT UNSIGNED NOT NULL  -- highest fence handed out
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS `shared_locks_seq` (
    name  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    fence BIGINT UNSIGNED NOT NULL  -- highest fence handed out
) ENGINE=MyISAM DEFAULT CHARSET=utf8mb4;
-- MariaDB 10.3 and later, on a MEMORY lock table: the fences of both modes (a MyISAM or
-- InnoDB lock table, or MySQL: the counters above)
CREATE SEQUENCE IF NOT EXISTS `shared_locks_fseq` CACHE 1000;
CREATE TABLE IF NOT EXISTS `shared_locks_boot` (
    id TINYINT NOT NULL PRIMARY KEY -- 1: `shared_locks_fseq` is seeded since the server started
) ENGINE=MEMORY;
-- Run records (dlock run --once, --once-per, dlock history)
CREATE TABLE IF NOT EXISTS `shared_locks_runs` (   -- run records: the kept runs
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
CREATE TABLE IF NOT EXISTS `shared_locks_runsum` (   -- run records: per name
    name          VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    full_name     VARBINARY(1024) NOT NULL,
    last_start_ms BIGINT NOT NULL,          -- unix ms, server clock
    last_fence    BIGINT UNSIGNED NOT NULL,
    ok_fence      BIGINT UNSIGNED NULL      -- a run that succeeded
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS `shared_locks_rkeep` (   -- run records: how many a name keeps
    name       VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,  -- the lock's key
    full_name  VARBINARY(1024) NOT NULL,
    keep_runs  INT NOT NULL,             -- 1..DLOCK_RUNS_KEPT_MAX
    kept_runs  INT NOT NULL,             -- its runs in the run table now
    kept_at    BIGINT UNSIGNED NOT NULL, -- the summary's last_fence then
    uncounted  INT NOT NULL DEFAULT 0    -- runs begun since the last COUNT(*)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
-- Leader values (dlock_elect, dlock_proclaim, dlock_leader)
CREATE TABLE IF NOT EXISTS `shared_locks_leader` (   -- leader values (elections)
    name      VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,  -- the lock's key
    full_name VARBINARY(1024) NOT NULL,
    fence     BIGINT UNSIGNED NOT NULL, -- the term
    value     TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL  -- at most 4096 bytes
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
-- Suspended jobs (dlock_suspend, dlock_resume, dlock_suspensions)
CREATE TABLE IF NOT EXISTS `shared_locks_susp` (   -- suspended jobs
    name      VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,  -- the lock's key
    full_name VARBINARY(1024) NOT NULL,
    by_whom   VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,  -- USER@HOST, at most 255 bytes
    since_ms  BIGINT NOT NULL,          -- unix ms, server clock
    reason    TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL  -- at most 1024 bytes, may be ''
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
-- For a table made by its-mieger/mysql-shared-locks, instead:
-- ALTER TABLE `shared_locks`
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
-- ALTER TABLE `shared_locks`
--     MODIFY name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;
-- For a session-mode table of dlock 0.1 (InnoDB: a durable
-- commit per acquire and per release):
-- ALTER TABLE `shared_locks` ENGINE=MyISAM;
