SELECT name, connection_id, created, ttl, lock_acquired, owner, fence, expires_ms, acquired_ms, host, pid, full_name FROM `shared_locks` LIMIT 0
