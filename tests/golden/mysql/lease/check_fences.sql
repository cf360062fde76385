SELECT name, fence FROM `shared_locks_fences` LIMIT 0
