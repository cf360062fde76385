DELETE FROM `shared_locks` WHERE name = %s AND lim > 1 AND owner IS NULL AND IFNULL(fence, 0) = %llu
