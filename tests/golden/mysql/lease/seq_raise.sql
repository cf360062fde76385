INSERT INTO `shared_locks_seq` (name, fence) VALUES (?, ?) ON DUPLICATE KEY UPDATE fence = GREATEST(fence, ?)
