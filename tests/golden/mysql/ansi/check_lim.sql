SELECT lim, slot FROM "app_locks" LIMIT 0
