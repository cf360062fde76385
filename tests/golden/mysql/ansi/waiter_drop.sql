DELETE FROM "app_locks" WHERE name = '%s' AND owner = '%s'
