-- Write a wait's lease into its waiter row, ours or one whose lease is
-- over: token ?, ttl ? s, token ?, lease ? ms (its end kept
-- in @dlock_wexp), pid ?, host ?, the row's name ?, token ?.
-- acquired_ms before owner: SET assigns left to right.
UPDATE {{table}} SET acquired_ms = IF(owner <=> ?, acquired_ms, {{nowms}}), connection_id = CONNECTION_ID(), created = UNIX_TIMESTAMP(), ttl = ?, lock_acquired = 0, owner = ?, fence = NULL, expires_ms = (@dlock_wexp := {{nowms}} + ?), pid = ?, host = ?, full_name = NULL WHERE name = ? AND (owner <=> ? OR {{expires}} <= {{nowms}})
