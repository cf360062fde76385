DELETE FROM "app_locks" WHERE owner IS NULL AND connection_id = 0 AND lim = %u AND full_name = %s
