-- The prefix (?: a LIKE pattern, '!' its escape).  VARBINARY: LIKE
-- compares bytes.  The leading space is sent.
 WHERE r.full_name LIKE ? ESCAPE '!'
