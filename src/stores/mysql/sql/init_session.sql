-- A new connection's first command (MYSQL_INIT_COMMAND): the client
-- charset the connector escapes for (utf8mb4, its collation the one the
-- connector asks for at connect; whatever the server's
-- init_connect or skip-character-set-client-handshake made it: under
-- GBK, SJIS or BIG5 an escaped quote after a multibyte character ends
-- the literal), the server's clock in UTC, autocommit, and the
-- idle-transaction bound of idle_set.sql at {{secs}} seconds.
SET NAMES utf8mb4 COLLATE utf8mb4_general_ci, time_zone = '+00:00', autocommit = 1, {{idle_set}}
