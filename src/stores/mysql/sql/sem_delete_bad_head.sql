-- A head the server stored with substitutions (limit ?, full name ?).
DELETE FROM {{table}} WHERE owner IS NULL AND connection_id = 0 AND lim = ? AND full_name = ?
