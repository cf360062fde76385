-- A semaphore's slot rows (prefix %s, %% a '%' of the pattern), for its
-- status.
SELECT {{columns}} FROM {{table}} WHERE name LIKE '%s%%'
