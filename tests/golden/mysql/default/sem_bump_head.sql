UPDATE `shared_locks` SET fence = ? WHERE name = ? AND lim = ? AND owner IS NULL
