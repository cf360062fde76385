-- Once a wait: delete the key's waiter rows (names starting '%s', %% a
-- '%' of the pattern) whose lease is over and whose session does not hold
-- the key (%s).
DELETE FROM {{table}} WHERE name LIKE '%s%%' AND lock_acquired = 0 AND fence IS NULL AND {{expires}} <= {{nowms}} AND IFNULL(IS_USED_LOCK(%s), 0) <> connection_id
