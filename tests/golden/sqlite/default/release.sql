DELETE FROM dlock_locks WHERE name = ?1 AND owner = ?2 AND boot_id = ?3 AND expires_at > ?4
