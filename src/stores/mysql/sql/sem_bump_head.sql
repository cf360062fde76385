-- Write an admission's fence %llu into its semaphore's head (key %s,
-- limit %u).
UPDATE {{table}} SET fence = %llu WHERE name = %s AND lim = %u AND owner IS NULL
