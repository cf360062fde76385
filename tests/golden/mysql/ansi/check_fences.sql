SELECT name, fence FROM "app_locks_fences" LIMIT 0
