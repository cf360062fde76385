-- Every row (dlock list): columns.sql.
SELECT {{columns}} FROM {{table}}
