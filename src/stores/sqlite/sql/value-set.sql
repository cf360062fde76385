-- value-set.sql - name ?1's leader value ?3, written under fence ?2 (the
-- term), replacing any earlier term's; in the transaction that first
-- checked the lock is still ours (ttl.sql), as run records are.
INSERT OR REPLACE INTO dlock_leaders (name, fence, value) VALUES (?1, ?2, ?3)
