-- A fragment of status.sql: session mode's counter of the key %s.
fence FROM {{seq}} WHERE name = %s
