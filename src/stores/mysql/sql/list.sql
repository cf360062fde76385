-- The rows whose key starts with a prefix (dlock list): columns.sql.  ?:
-- a LIKE pattern ('!' its escape), the prefix's first 24 characters and
-- '%' (status.c: a long name's key keeps only its first 24 characters).
-- A range on the name index where it is a BTREE (InnoDB, MyISAM); a
-- MEMORY table's HASH index has no order, so there it is read in full
-- (docs/stores/mysql.md).  The C code checks the whole name after.
SELECT {{columns}} FROM {{table}} WHERE name LIKE ? ESCAPE '!'
