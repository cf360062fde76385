 WHERE l.name IN ({{keys}}) AND l.connection_id = b.cid AND IS_USED_LOCK(b.k) = b.cid
