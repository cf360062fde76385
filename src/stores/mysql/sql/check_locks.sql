-- Is the lock table there, with our columns?  (schema.c, check_tables())
SELECT name, connection_id, created, ttl, lock_acquired, owner, fence, expires_ms, acquired_ms, host, pid, full_name FROM {{table}} LIMIT 0
