-- Who a session is, as the server shows it to us (the status of a holder
-- that is not dlock, store.c): its login and its client's address
-- ("host:port", or "localhost" for a socket).  ? the session's id.
-- The server shows a login without the PROCESS privilege only its own
-- sessions: then no row.
SELECT USER, HOST FROM information_schema.PROCESSLIST WHERE ID = ?
