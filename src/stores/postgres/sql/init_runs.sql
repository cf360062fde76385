-- The run tables alone, for a server whose other objects predate them
-- (runs.c): CREATE on the schema is all it needs, where the whole DDL
-- needs to own the functions it replaces.  One implicit transaction (an
-- error rolls it back), under init.sql's lock.
-- @keep-comments: these comments are sent and printed (dlock ddl).
SELECT pg_advisory_xact_lock(hashtextextended('dlock: create tables', 0));
-- @include part-runs-ddl.sql
