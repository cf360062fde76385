SET SESSION max_heap_table_size = DEFAULT
