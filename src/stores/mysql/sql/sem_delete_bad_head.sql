-- A head the server stored with substitutions (limit %u, full name %s).
DELETE FROM {{table}} WHERE owner IS NULL AND connection_id = 0 AND lim = %u AND full_name = %s
