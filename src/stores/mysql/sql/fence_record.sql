-- Lease mode with the fence sequence: record the fence ? in the name's
-- (?) durable counter, raising it past a higher one there (? again).
INSERT INTO {{fences}} (name, fence) VALUES (?, LAST_INSERT_ID(?)) ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence + 1, ?))
