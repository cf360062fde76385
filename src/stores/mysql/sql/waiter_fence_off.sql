-- Fence off a waiter whose lease is over (waiter.c): its row's name ?
-- (hex, '~', digits), its session ?, its token ?.
DELETE FROM {{table}} WHERE name = ? AND connection_id = ? AND owner = ? AND lock_acquired = 0 AND {{expires}} <= {{nowms}}
