-- The batch's first lock: position %zu, token '%s', ttl %lld ms and %lld
-- s{{session}} (session mode: its key %s and session %lu).
SELECT %zu AS i, _ascii'%s' AS tok, %lld AS ms, %lld AS s{{session}}
