-- Session mode's one-statement acquire (have_fseq): GET_LOCK, the row and
-- the fence (NEXTVAL, under the GET_LOCK) in one INSERT ... SELECT.  Key
-- %s, ttl %lld s, token '%s', ttl %lld ms, host %s, pid %lld, then
-- ({{full_col}}, {{full_val}}) the full name %s where the key is not the
-- name itself, and the key %s again.
INSERT INTO {{table}} (name, connection_id, created, ttl, lock_acquired, owner, fence, expires_ms, acquired_ms, host, pid{{full_col}}) SELECT %s, CONNECTION_ID(), UNIX_TIMESTAMP(), %lld, 1, '%s', LAST_INSERT_ID(NEXTVAL({{fseq}})), {{nowms}} + %lld, {{nowms}}, %s, %lld{{full_val}} FROM DUAL WHERE GET_LOCK(%s, 0) = 1
