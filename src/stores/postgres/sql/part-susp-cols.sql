-- Fragment: a dlock_suspensions row's by_whom, since_ms and reason as
-- suspend.c reads them: NULL for a column of a type dlock never gives it
-- (a table someone else made or altered), which it shows as "?" (texts)
-- or 0 (since_ms); lengths are checked in C.
CASE WHEN pg_typeof(by_whom) IN ('text'::regtype, 'varchar'::regtype) THEN
by_whom::text END AS by_whom, CASE WHEN pg_typeof(since_ms) IN
('bigint'::regtype, 'integer'::regtype, 'smallint'::regtype) THEN
since_ms::text::bigint END AS since_ms, CASE WHEN pg_typeof(reason) IN
('text'::regtype, 'varchar'::regtype) THEN reason::text END AS reason
