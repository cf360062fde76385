WITH i AS (INSERT INTO dlock_suspensions (name, by_whom, since_ms, reason)
VALUES ($1, $2,
floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
, $3) ON CONFLICT (name) DO NOTHING RETURNING 1),
e AS (SELECT true AS found,
CASE WHEN pg_typeof(by_whom) IN ('text'::regtype, 'varchar'::regtype) THEN
by_whom::text END AS by_whom, CASE WHEN pg_typeof(since_ms) IN
('bigint'::regtype, 'integer'::regtype, 'smallint'::regtype) THEN
since_ms::text::bigint END AS since_ms, CASE WHEN pg_typeof(reason) IN
('text'::regtype, 'varchar'::regtype) THEN reason::text END AS reason
FROM dlock_suspensions WHERE name = $1)
SELECT (SELECT count(*) FROM i), e.found, e.by_whom, e.since_ms, e.reason
FROM (SELECT 1) o LEFT JOIN e ON NOT EXISTS (SELECT 1 FROM i)
