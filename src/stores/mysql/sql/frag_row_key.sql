-- A fragment ({{row_key}}): the GET_LOCK key a row's holder took, read
-- from the row.  GET_LOCK compares bytes, and a latin1 column
-- (its-mieger's DDL) gives latin1 bytes, so the column goes through
-- utf8mb4 like every other key we send.  A row found by `name = key` may
-- be another string than our key under a case- or accent-insensitive
-- collation (latin1_swedish_ci: u-umlaut = y): its holder is judged by
-- its own key, never by ours.
CONVERT(name USING utf8mb4)
