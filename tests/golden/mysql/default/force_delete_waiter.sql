DELETE FROM `shared_locks` WHERE name = '%s' AND connection_id = %lld AND lock_acquired = 0
