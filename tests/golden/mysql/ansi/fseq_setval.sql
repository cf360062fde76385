DO SETVAL("app_locks_fseq", ?)
