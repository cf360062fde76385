-- The batch's keys ({{keys}}: a comma-separated list of literals), and in
-- session mode their GET_LOCKs still held by the sessions recorded.  The
-- leading space is sent.
 WHERE l.name IN ({{keys}}){{session}}
