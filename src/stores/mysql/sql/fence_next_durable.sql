-- Lease mode's next fence of the name {{key}}, with session mode's
-- counters there: from the durable {{fences}}, and above session mode's
-- counter {{seq}} too.  Left in LAST_INSERT_ID().
INSERT INTO {{fences}} (name, fence) VALUES ({{key}}, LAST_INSERT_ID(GREATEST({{nowus}}, IFNULL((SELECT fence FROM {{seq}} WHERE name = {{key}}), 0) + 1))) ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence + 1, {{nowus}}, IFNULL((SELECT fence FROM {{seq}} WHERE name = {{key}}), 0) + 1))
