-- Write an admission's fence ? into its semaphore's head (key ?,
-- limit ?).
UPDATE {{table}} SET fence = ? WHERE name = ? AND lim = ? AND owner IS NULL
