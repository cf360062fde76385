DELETE FROM `shared_locks` WHERE name = %s AND owner = '%s' AND IF(connection_id = CONNECTION_ID(), RELEASE_LOCK(%s), 0) = 1
