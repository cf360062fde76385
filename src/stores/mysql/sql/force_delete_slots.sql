-- release --force of a semaphore: every slot row (prefix %s, %% a '%' of
-- the pattern).
DELETE FROM {{table}} WHERE name LIKE '%s%%'
