-- An attempt's look at a taken key in one statement (acquire.c's
-- contended()): the row at the key ? (its columns, then 0); the waiter row
-- of the session holding the key's GET_LOCK (the waiter prefix ?, then
-- that session, of key ?; then 1); and that session alone (of key ?; 0:
-- none) in the 5th column (then 2).  What used_by.sql and
-- dlock__my_read_waiter() would read after read_row.sql found no row.
SELECT {{columns}}, 0 FROM {{table}} WHERE name = ? UNION ALL SELECT {{columns}}, 1 FROM {{table}} WHERE name = CONCAT(?, IFNULL(IS_USED_LOCK(?), 0)) UNION ALL SELECT 0, NULL, 0, 0, IFNULL(IS_USED_LOCK(?), 0), 0, 0, NULL, 0, 0, NULL, NULL, 2
