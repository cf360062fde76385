SELECT CONNECTION_ID(), @@wait_timeout, @@max_connections
