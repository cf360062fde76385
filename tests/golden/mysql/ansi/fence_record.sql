INSERT INTO "app_locks_fences" (name, fence) VALUES (%s, LAST_INSERT_ID(%llu)) ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence + 1, %llu))
