SELECT name, connection_id, created, ttl, lock_acquired, owner, fence, expires_ms, acquired_ms, host, pid, full_name FROM "app_locks" LIMIT 0
