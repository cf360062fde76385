SELECT COUNT(*) FROM `shared_locks_fseq`, `shared_locks_boot`
