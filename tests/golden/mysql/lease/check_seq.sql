SELECT name, fence FROM `shared_locks_seq` LIMIT 0
