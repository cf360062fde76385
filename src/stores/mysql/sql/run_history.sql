-- dlock history: a name's runs (key %s, full name %s), newest first, at
-- most %u.
SELECT {{run_cols}} FROM {{runs}} WHERE name = %s AND full_name = %s ORDER BY fence DESC LIMIT %u
