SELECT expires_at - ?3 FROM dlock_locks WHERE name = ?1 AND owner = ?2 AND boot_id = ?4 AND expires_at > ?3
