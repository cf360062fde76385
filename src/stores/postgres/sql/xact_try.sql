-- dlock_pg_xact_lock() with no wait (xact.c), on the caller's
-- connection: a transaction lock on the name's key.  $1 name.
SELECT pg_try_advisory_xact_lock(hashtextextended($1::text, 0))
