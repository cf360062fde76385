-- dlock history: a name's runs (key ?, full name ?), newest first, at
-- most ?.
SELECT {{run_cols}} FROM {{runs}} WHERE name = ? AND full_name = ? ORDER BY fence DESC LIMIT ?
