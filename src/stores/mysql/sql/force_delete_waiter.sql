-- release --force of a granted waiter's GET_LOCK: its waiter row ('%s',
-- session %lld).
DELETE FROM {{table}} WHERE name = '%s' AND connection_id = %lld AND lock_acquired = 0
