CALL `shared_locks_rel1`(?, ?)
