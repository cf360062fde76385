DELETE FROM `shared_locks` WHERE name = ? AND owner = ? AND IF(connection_id = CONNECTION_ID(), RELEASE_LOCK(?), 0) = 1
