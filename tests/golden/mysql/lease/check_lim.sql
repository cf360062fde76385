SELECT lim, slot FROM `shared_locks` LIMIT 0
