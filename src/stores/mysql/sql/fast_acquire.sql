-- Session mode's one-statement acquire (have_fseq): GET_LOCK, the row and
-- the fence (NEXTVAL, under the GET_LOCK) in one INSERT ... SELECT.  Key
-- ?, ttl ? s, token ?, ttl ? ms, host ?, pid ?, then
-- ({{full_col}}, {{full_val}}) the full name ? where the key is not the
-- name itself, and the key ? again.
INSERT INTO {{table}} (name, connection_id, created, ttl, lock_acquired, owner, fence, expires_ms, acquired_ms, host, pid{{full_col}}) SELECT ?, CONNECTION_ID(), UNIX_TIMESTAMP(), ?, 1, ?, LAST_INSERT_ID(NEXTVAL({{fseq}})), {{nowms}} + ?, {{nowms}}, ?, ?{{full_val}} FROM DUAL WHERE GET_LOCK(?, 0) = 1
