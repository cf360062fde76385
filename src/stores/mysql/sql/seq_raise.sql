-- Lease mode, after taking a fence (%llu, twice) from the durable counter:
-- raise session mode's counter of the key (%s, an escaped literal) to it.
INSERT INTO {{seq}} (name, fence) VALUES (%s, %llu) ON DUPLICATE KEY UPDATE fence = GREATEST(fence, %llu)
