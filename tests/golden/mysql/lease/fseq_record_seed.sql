INSERT INTO `shared_locks_fences` (name, fence) VALUES ('', ?) ON DUPLICATE KEY UPDATE fence = GREATEST(fence, ?)
