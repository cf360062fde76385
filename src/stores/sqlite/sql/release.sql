-- release.sql - our row (?1 name, ?2 owner), if it is from this boot (?3)
-- and its lease has not ended (?4: now).  No row: the lock was LOST.
DELETE FROM dlock_locks WHERE name = ?1 AND owner = ?2 AND boot_id = ?3 AND expires_at > ?4
