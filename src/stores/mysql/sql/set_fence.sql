-- Write the fence ? into our row (key ?, token ?).
UPDATE {{table}} SET fence = ? WHERE name = ? AND owner = ?
