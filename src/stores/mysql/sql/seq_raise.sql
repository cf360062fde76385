-- Lease mode, after taking a fence (?, twice) from the durable counter:
-- raise session mode's counter of the key (?, an escaped literal) to it.
INSERT INTO {{seq}} (name, fence) VALUES (?, ?) ON DUPLICATE KEY UPDATE fence = GREATEST(fence, ?)
