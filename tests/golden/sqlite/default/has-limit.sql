SELECT 1 FROM pragma_table_info('dlock_locks') WHERE name = 'limit'
