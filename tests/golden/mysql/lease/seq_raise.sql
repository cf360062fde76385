INSERT INTO `shared_locks_seq` (name, fence) VALUES (%s, %llu) ON DUPLICATE KEY UPDATE fence = GREATEST(fence, %llu)
