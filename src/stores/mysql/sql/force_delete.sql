-- release --force: the row at the key ?, whoever holds it.
DELETE FROM {{table}} WHERE name = ?
