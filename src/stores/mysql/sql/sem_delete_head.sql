-- Delete a semaphore's dead head (key ?), only if its fence is still
-- ? (what was read before counting the slots).
DELETE FROM {{table}} WHERE name = ? AND lim > 1 AND owner IS NULL AND IFNULL(fence, 0) = ?
