-- resume (runs.c, susp_op): one transaction in one packet.  The name's
-- record (key ?, full name ?), locked, then deleted (key ?, full name ?):
-- the answer is what it was (no row: none).
START TRANSACTION; SELECT by_whom, since_ms, reason FROM {{susp}} WHERE name = ? AND full_name = ? FOR UPDATE; DELETE FROM {{susp}} WHERE name = ? AND full_name = ?; COMMIT
