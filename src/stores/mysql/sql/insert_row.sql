-- Our row (acquire.c, insert_row()): key ?, ttl ? s, lock_acquired ?
-- (0 in lease mode), token ?, ttl ? ms, host ?, pid ?, full
-- name ?, and for a semaphore's slot ({{sem_cols}}, {{sem_vals}}) its
-- limit ? and slot ?.
INSERT INTO {{table}} (name, connection_id, created, ttl, lock_acquired, owner, expires_ms, acquired_ms, host, pid, full_name{{sem_cols}}) VALUES (?, CONNECTION_ID(), UNIX_TIMESTAMP(), ?, ?, ?, {{nowms}} + ?, {{nowms}}, ?, ?, ?{{sem_vals}})
