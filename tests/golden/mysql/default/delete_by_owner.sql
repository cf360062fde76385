DELETE FROM `shared_locks` WHERE owner = ?
