-- Semaphores' columns, added after 0.2.
SELECT lim, slot FROM {{table}} LIMIT 0
