-- The row at a key (%s), its holder's columns (columns.sql).
SELECT {{columns}} FROM {{table}} WHERE name = %s
