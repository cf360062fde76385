INSERT INTO `shared_locks_fences` (name, fence) VALUES (?, LAST_INSERT_ID(?)) ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence + 1, ?))
