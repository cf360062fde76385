-- The next fence of the name {{key}} from the counter table {{counter}}
-- (session mode's {{seq}}, or without it the durable one), left in
-- LAST_INSERT_ID(): above the name's counter and at least the server's
-- clock in microseconds, so that a counter a crash took back, or lost,
-- is overtaken at once.  See dlock__my_sb_fence() in schema.c.
INSERT INTO {{counter}} (name, fence) VALUES ({{key}}, LAST_INSERT_ID({{nowus}})) ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence + 1, {{nowus}}))
