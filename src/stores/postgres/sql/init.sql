-- dlock init: ddl.sql in one transaction, serialised by a
-- transaction-scoped advisory lock: concurrent CREATE TABLE IF NOT EXISTS
-- can otherwise fail on the catalog's unique keys.
-- @keep-comments: these comments are sent and printed (dlock ddl).
BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('dlock: create tables', 0));
-- @include ddl.sql
COMMIT;
