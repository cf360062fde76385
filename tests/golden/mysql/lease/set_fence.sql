UPDATE `shared_locks` SET fence = %llu WHERE name = %s AND owner = '%s'
