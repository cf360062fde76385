-- A new waiter row: its name '%s', ttl %lld s, token '%s', lease %lld ms
-- (its end in @dlock_wexp), host %s, pid %lld.
INSERT INTO {{table}} (name, connection_id, created, ttl, lock_acquired, owner, expires_ms, acquired_ms, host, pid) VALUES ('%s', CONNECTION_ID(), UNIX_TIMESTAMP(), %lld, 0, '%s', (@dlock_wexp := {{nowms}} + %lld), {{nowms}}, %s, %lld)
