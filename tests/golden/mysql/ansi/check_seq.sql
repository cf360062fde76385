SELECT name, fence FROM "app_locks_seq" LIMIT 0
