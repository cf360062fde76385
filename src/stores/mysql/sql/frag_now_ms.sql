-- A fragment ({{nowms}}): the server's clock in ms; every connection runs
-- with time_zone +00:00, so this has no daylight-saving jumps.
CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
