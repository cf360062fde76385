-- A new connection's first command (MYSQL_INIT_COMMAND): the server's
-- clock in UTC, autocommit, and the idle-transaction bound of
-- idle_set.sql at {{secs}} seconds.
SET time_zone = '+00:00', autocommit = 1, {{idle_set}}
