-- value_set (runs.c, set_op): one transaction in one packet.  Only if
-- we still hold the lock ({{own}}: our row's WHERE, own.sql;
-- {{for_update}}: lease mode locks our row, so no takeover deletes it
-- before we commit) the name's leader value (key ?, full name ?, fence
-- ?, value ?) replaces whatever was there; answers 1 (written) or 0 (not
-- ours, nothing written).
START TRANSACTION; SET @dl_own = 0; SELECT COUNT(*) INTO @dl_own FROM {{table}} {{own}}{{for_update}}; INSERT INTO {{leader}} (name, full_name, fence, value) SELECT ?, ?, ?, ? FROM DUAL WHERE @dl_own = 1 ON DUPLICATE KEY UPDATE full_name = VALUES(full_name), fence = VALUES(fence), value = VALUES(value); SELECT @dl_own = 1; COMMIT
