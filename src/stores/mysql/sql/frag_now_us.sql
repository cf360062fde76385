-- A fragment ({{nowus}}): the server's clock in microseconds, the floor
-- of every fence (see fence_next.sql).
CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS UNSIGNED)
