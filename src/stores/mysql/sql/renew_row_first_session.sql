-- Session mode's part of renew_row_first.sql: the key %s, the session %lu.
, %s AS k, %lu AS cid
