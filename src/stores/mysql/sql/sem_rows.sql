-- A semaphore's slot rows (?: the LIKE pattern, the prefix and '%'), for its
-- status.
SELECT {{columns}} FROM {{table}} WHERE name LIKE ?
