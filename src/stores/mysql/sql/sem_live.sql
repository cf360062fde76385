-- A semaphore's live slot rows (semaphore.c, sem_live()): the slot keys
-- start with the prefix (?: the LIKE pattern, the hex prefix and '%').
SELECT slot, {{expires}} - {{nowms}} FROM {{table}} WHERE name LIKE ? AND {{expires}} > {{nowms}} AND (lock_acquired = 0 OR IFNULL(IS_USED_LOCK({{row_key}}), 0) = connection_id)
