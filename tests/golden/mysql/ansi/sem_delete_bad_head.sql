DELETE FROM "app_locks" WHERE owner IS NULL AND connection_id = 0 AND lim = ? AND full_name = ?
