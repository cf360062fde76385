DELETE FROM `shared_locks` WHERE name LIKE ?
