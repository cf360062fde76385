DELETE FROM dlock_held WHERE name = $1 AND owner = 'broken:' || $2
