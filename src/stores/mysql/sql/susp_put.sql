-- suspend (runs.c, susp_op): one transaction in one packet.  If the name
-- (key ?, full name ?) has no record, it gets one (key ?, full name ?, by
-- ?, since the server's now, reason ?); answers whether it had one and
-- the record as it now is (key ?, full name ?).  Two at once: the
-- second's INSERT waits for the first's row, fails as a duplicate and
-- goes again (run_tx), then finds it.
START TRANSACTION; SET @dl_was = 0; SELECT COUNT(*) INTO @dl_was FROM {{susp}} WHERE name = ? AND full_name = ? FOR UPDATE; INSERT INTO {{susp}} (name, full_name, by_whom, since_ms, reason) SELECT ?, ?, ?, {{runnow}}, ? FROM DUAL WHERE @dl_was = 0; SELECT @dl_was, by_whom, since_ms, reason FROM {{susp}} WHERE name = ? AND full_name = ?; COMMIT
