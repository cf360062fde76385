SELECT keep_runs FROM (SELECT
CASE WHEN pg_typeof(keep_runs) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN keep_runs::text::bigint END AS keep_runs, CASE
WHEN pg_typeof(kept_runs) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN kept_runs::text::bigint END AS kept_runs, CASE
WHEN pg_typeof(kept_fence) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN kept_fence::text::bigint END AS kept_fence,
CASE WHEN pg_typeof(uncounted) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN uncounted::text::bigint END AS uncounted
FROM dlock_run_names WHERE name = $1) k
