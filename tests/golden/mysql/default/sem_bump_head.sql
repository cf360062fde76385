UPDATE `shared_locks` SET fence = %llu WHERE name = %s AND lim = %u AND owner IS NULL
