-- Fragment: after the lock step ({{got}}), rows of the name whose
-- sessions cannot hold the key any more are tidied away (d; exclusive:
-- every other session's; SKIP LOCKED: a row being released is going
-- anyway), then the fence and our row; pg_locks is read only if a shared
-- acquire finds other sessions' shared rows.  {{extra}}: more columns.
, d AS (DELETE FROM dlock_held WHERE ctid IN (SELECT t.ctid FROM
dlock_held t WHERE (SELECT got FROM {{got}}) AND t.name = $1 AND
t.sess <> $8::bigint AND (NOT $3::boolean OR NOT t.shared OR
t.expires_at <= clock_timestamp() OR NOT
-- @include part-holds.sql
) FOR UPDATE OF t SKIP LOCKED))
-- @include part-fence-row.sql
SELECT {{got}}.got, (SELECT fence FROM i){{extra}} FROM {{got}}
