-- has-limit.sql - does dlock_locks have the limit column (a row: yes)?
-- Asked by every open; migrate-limit.sql adds it when not.
SELECT 1 FROM pragma_table_info('dlock_locks') WHERE name = 'limit'
