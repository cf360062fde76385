-- After release_x1.sql found no row: our row, if release --force broke
-- it.  $1 name, $2 owner.
DELETE FROM dlock_held WHERE name = $1 AND owner = 'broken:' || $2
