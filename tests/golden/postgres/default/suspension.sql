SELECT
CASE WHEN pg_typeof(by_whom) IN ('text'::regtype, 'varchar'::regtype) THEN
by_whom::text END AS by_whom, CASE WHEN pg_typeof(since_ms) IN
('bigint'::regtype, 'integer'::regtype, 'smallint'::regtype) THEN
since_ms::text::bigint END AS since_ms, CASE WHEN pg_typeof(reason) IN
('text'::regtype, 'varchar'::regtype) THEN reason::text END AS reason
FROM dlock_suspensions WHERE name = $1
