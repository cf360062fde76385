-- A fragment of status.sql: session mode's counter of the key ?.
fence FROM {{seq}} WHERE name = ?
