-- Fence off a waiter whose lease is over (waiter.c): its row's name '%s'
-- (hex, '~', digits), its session %llu, its token '%s'.
DELETE FROM {{table}} WHERE name = '%s' AND connection_id = %llu AND owner = '%s' AND lock_acquired = 0 AND {{expires}} <= {{nowms}}
