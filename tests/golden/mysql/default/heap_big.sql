SET SESSION max_heap_table_size = 1073741824
