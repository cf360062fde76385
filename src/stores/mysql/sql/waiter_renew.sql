-- Write a wait's lease into its waiter row, ours or one whose lease is
-- over: token '%s', ttl %lld s, token '%s', lease %lld ms (its end kept
-- in @dlock_wexp), pid %lld, host %s, the row's name '%s', token '%s'.
-- acquired_ms before owner: SET assigns left to right.
UPDATE {{table}} SET acquired_ms = IF(owner <=> '%s', acquired_ms, {{nowms}}), connection_id = CONNECTION_ID(), created = UNIX_TIMESTAMP(), ttl = %lld, lock_acquired = 0, owner = '%s', fence = NULL, expires_ms = (@dlock_wexp := {{nowms}} + %lld), pid = %lld, host = %s, full_name = NULL WHERE name = '%s' AND (owner <=> '%s' OR {{expires}} <= {{nowms}})
