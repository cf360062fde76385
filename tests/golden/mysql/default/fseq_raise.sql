DO SETVAL(`shared_locks_fseq`, ?)
