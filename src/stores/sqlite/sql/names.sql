-- names.sql - the names with a row that start with a prefix (list): a
-- range on the primary key's first column (name), never a scan.  ?1 the
-- prefix, ?2 the first string above every name that starts with it (the
-- prefix with its last byte raised, after dropping trailing 0xFF bytes),
-- both TEXT: name is BINARY, so they compare as memcmp() does.  With no
-- such string (an empty or all-0xFF prefix) ?2 is a BLOB, which sorts
-- above every TEXT value.  status.c checks the prefix again in C.
SELECT DISTINCT name FROM dlock_locks WHERE name >= ?1 AND name < ?2 ORDER BY name
