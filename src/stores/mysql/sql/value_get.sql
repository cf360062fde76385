-- value_get (runs.c): a name's leader value (key ?, full name ?) and the
-- fence it was written under; no row: none.
SELECT fence, value FROM {{leader}} WHERE name = ? AND full_name = ?
