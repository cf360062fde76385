-- Fragment: a dlock_run_names row's keep_runs, kept_runs, kept_fence and
-- uncounted as runs.c reads them: NULL for a column of a type dlock
-- never gives it (a table someone else made or altered), which counts as
-- no setting (20) and no count (the runs are counted again); ranges are
-- checked where they are used.
CASE WHEN pg_typeof(keep_runs) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN keep_runs::text::bigint END AS keep_runs, CASE
WHEN pg_typeof(kept_runs) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN kept_runs::text::bigint END AS kept_runs, CASE
WHEN pg_typeof(kept_fence) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN kept_fence::text::bigint END AS kept_fence,
CASE WHEN pg_typeof(uncounted) IN ('integer'::regtype, 'bigint'::regtype,
'smallint'::regtype) THEN uncounted::text::bigint END AS uncounted
