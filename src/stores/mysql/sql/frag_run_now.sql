-- A fragment ({{runnow}}): the server's clock in ms, from NOW(6) (run
-- records).
CAST(FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000) AS SIGNED)
