-- A granted wait's claim in one statement (have_fseq, a lock): its waiter
-- row becomes the holder row, with the fence (NEXTVAL, under the
-- GET_LOCK), on condition that the wait's lease is still current and
-- that this session holds the key's GET_LOCK.  Key ?, ttl ? s, ttl ? ms,
-- host ?, pid ?, ({{full_set}}) the full name ? where the key is not the
-- name itself, then the waiter row's name ?, token ?, and the key ? again.
-- A row of the key already there: ER_DUP_ENTRY, nothing changed.
UPDATE {{table}} SET name = ?, connection_id = CONNECTION_ID(), created = UNIX_TIMESTAMP(), ttl = ?, lock_acquired = 1, fence = LAST_INSERT_ID(NEXTVAL({{fseq}})), expires_ms = {{nowms}} + ?, acquired_ms = {{nowms}}, host = ?, pid = ?{{full_set}} WHERE name = ? AND owner = ? AND {{expires}} > {{nowms}} AND IS_USED_LOCK(?) = CONNECTION_ID()
