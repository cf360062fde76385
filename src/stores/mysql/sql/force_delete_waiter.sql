-- release --force of a granted waiter's GET_LOCK: its waiter row (?,
-- session ?).
DELETE FROM {{table}} WHERE name = ? AND connection_id = ? AND lock_acquired = 0
