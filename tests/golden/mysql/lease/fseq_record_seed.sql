INSERT INTO `shared_locks_fences` (name, fence) VALUES ('', %lld) ON DUPLICATE KEY UPDATE fence = GREATEST(fence, %lld)
