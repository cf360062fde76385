CALL `shared_locks_rel1`(%s, '%s')
