-- Session mode's counters: no durable commit.  What a crash may lose of
-- them is made up for by the clock floor of every fence (fence_next.sql).
CREATE TABLE IF NOT EXISTS {{seq}} (
    name  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    fence BIGINT UNSIGNED NOT NULL  -- highest fence handed out
) ENGINE=MyISAM DEFAULT CHARSET=utf8mb4
