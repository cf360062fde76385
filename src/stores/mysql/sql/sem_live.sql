-- A semaphore's live slot rows (semaphore.c, sem_live()): the slot keys
-- start with the prefix %s (hex: no escaping needed; %% is a '%' of the
-- LIKE pattern).
SELECT slot, {{expires}} - {{nowms}} FROM {{table}} WHERE name LIKE '%s%%' AND {{expires}} > {{nowms}} AND (lock_acquired = 0 OR IFNULL(IS_USED_LOCK({{row_key}}), 0) = connection_id)
