-- ttl.sql - what is left of our lease (?1 name, ?2 owner, ?3 now, ?4 boot
-- id); no row: the lock is LOST.  Also runs.c's "do we still own it?".
SELECT expires_at - ?3 FROM dlock_locks WHERE name = ?1 AND owner = ?2 AND boot_id = ?4 AND expires_at > ?3
