-- Before creating the MEMORY lock table: its size is capped when it is
-- created, by max_heap_table_size (1 GiB: about 400,000 rows of 2.5 KiB).
SET SESSION max_heap_table_size = 1073741824
