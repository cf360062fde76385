-- A new connection's session id, how long the server lets it sit idle,
-- and its connection limit (conn.c, conn_open()).
SELECT CONNECTION_ID(), @@wait_timeout, @@max_connections
