-- Our row (acquire.c, insert_row()): key %s, ttl %lld s, lock_acquired %d
-- (0 in lease mode), token '%s', ttl %lld ms, host %s, pid %lld, full
-- name %s, and for a semaphore's slot ({{sem_cols}}, {{sem_vals}}) its
-- limit %u and slot %d.
INSERT INTO {{table}} (name, connection_id, created, ttl, lock_acquired, owner, expires_ms, acquired_ms, host, pid, full_name{{sem_cols}}) VALUES (%s, CONNECTION_ID(), UNIX_TIMESTAMP(), %lld, %d, '%s', {{nowms}} + %lld, {{nowms}}, %s, %lld, %s{{sem_vals}})
