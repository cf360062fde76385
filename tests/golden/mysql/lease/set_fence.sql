UPDATE `shared_locks` SET fence = ? WHERE name = ? AND owner = ?
