-- Lease mode with the fence sequence: record the fence %llu in the name's
-- (%s) durable counter, raising it past a higher one there (%llu again).
INSERT INTO {{fences}} (name, fence) VALUES (%s, LAST_INSERT_ID(%llu)) ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence + 1, %llu))
