-- names.sql - every name with a row (list; the prefix is matched in C).
SELECT DISTINCT name FROM dlock_locks ORDER BY name
