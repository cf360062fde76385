-- Run records (runs.c): the kept runs.
CREATE TABLE IF NOT EXISTS {{runs}} (   -- run records: the kept runs
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
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
