DELETE FROM "app_locks" WHERE name = ? AND owner = ?
