UPDATE dlock_locks SET expires_at = ?3 WHERE name = ?1 AND owner = ?2 AND boot_id = ?4 AND expires_at > ?5
