-- The durable fence floor: lease mode's counters (a durable commit per
-- acquire, like its rows), and the counters of dlock 0.1.
CREATE TABLE IF NOT EXISTS {{fences}} (
    name  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    fence BIGINT UNSIGNED NOT NULL  -- highest fence handed out
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
