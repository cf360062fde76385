-- Session mode's part of renew_row_first.sql: the key ?, the session ?.
, ? AS k, ? AS cid
