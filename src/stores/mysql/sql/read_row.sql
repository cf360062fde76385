-- The row at a key (?), its holder's columns (columns.sql).
SELECT {{columns}} FROM {{table}} WHERE name = ?
