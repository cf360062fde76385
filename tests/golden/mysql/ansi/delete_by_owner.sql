DELETE FROM "app_locks" WHERE owner = ?
