CALL "app_locks_rel1"(?, ?)
