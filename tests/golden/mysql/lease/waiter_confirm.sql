DELETE FROM `shared_locks` WHERE name = ? AND owner = ? AND COALESCE(expires_ms, (created + ttl + 1) * 1000) > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
