-- release --force: the row at the key %s, whoever holds it.
DELETE FROM {{table}} WHERE name = %s
