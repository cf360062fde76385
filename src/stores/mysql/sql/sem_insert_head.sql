-- A semaphore's head row at the name's own key ?: no owner, connection
-- 0, a lease of DLOCK_TTL_MAX_MS ({{ttl_max_s}} s, {{ttl_max_ms}} ms) that
-- no client renews; full name ?, limit ?.
INSERT INTO {{table}} (name, connection_id, created, ttl, lock_acquired, owner, expires_ms, acquired_ms, full_name, lim) VALUES (?, 0, UNIX_TIMESTAMP(), {{ttl_max_s}}, 0, NULL, {{nowms}} + {{ttl_max_ms}}, {{nowms}}, ?, ?)
