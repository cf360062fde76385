-- The batch's keys (%s: a comma-separated list of literals), and in
-- session mode their GET_LOCKs still held by the sessions recorded.  The
-- leading space is sent.
 WHERE l.name IN (%s){{session}}
