-- extend.sql - a new lease end ?3 for our row (?1 name, ?2 owner), only if
-- it is from this boot (?4) and its lease has not ended (?5: now).  No row
-- changed: the lock is LOST.
UPDATE dlock_locks SET expires_at = ?3 WHERE name = ?1 AND owner = ?2 AND boot_id = ?4 AND expires_at > ?5
