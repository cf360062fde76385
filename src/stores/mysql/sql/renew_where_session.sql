-- Session mode's part of renew_where.sql (the leading space is sent).
 AND l.connection_id = b.cid AND IS_USED_LOCK(b.k) = b.cid
