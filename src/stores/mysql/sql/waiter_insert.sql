-- A new waiter row: its name ?, ttl ? s, token ?, lease ? ms
-- (its end in @dlock_wexp), host ?, pid ?.
INSERT INTO {{table}} (name, connection_id, created, ttl, lock_acquired, owner, expires_ms, acquired_ms, host, pid) VALUES (?, CONNECTION_ID(), UNIX_TIMESTAMP(), ?, 0, ?, (@dlock_wexp := {{nowms}} + ?), {{nowms}}, ?, ?)
