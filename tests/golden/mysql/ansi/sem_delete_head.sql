DELETE FROM "app_locks" WHERE name = ? AND lim > 1 AND owner IS NULL AND IFNULL(fence, 0) = ?
