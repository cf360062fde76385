UPDATE "app_locks" SET fence = ? WHERE name = ? AND owner = ?
