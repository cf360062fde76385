-- Delete a semaphore's dead head (key %s), only if its fence is still
-- %llu (what was read before counting the slots).
DELETE FROM {{table}} WHERE name = %s AND lim > 1 AND owner IS NULL AND IFNULL(fence, 0) = %llu
