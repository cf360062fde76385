-- Once a wait: delete the key's waiter rows (?: the LIKE pattern,
-- the key's waiter prefix and '%') whose lease is over and whose session does not hold
-- the key (?).
DELETE FROM {{table}} WHERE name LIKE ? AND lock_acquired = 0 AND fence IS NULL AND {{expires}} <= {{nowms}} AND IFNULL(IS_USED_LOCK(?), 0) <> connection_id
