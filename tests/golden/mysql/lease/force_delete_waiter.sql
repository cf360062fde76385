DELETE FROM `shared_locks` WHERE name = ? AND connection_id = ? AND lock_acquired = 0
