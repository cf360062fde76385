CALL "app_locks_rel1"(%s, '%s')
