-- release --force of a semaphore: every slot row (?: the LIKE pattern,
-- the slot keys' prefix and '%').
DELETE FROM {{table}} WHERE name LIKE ?
