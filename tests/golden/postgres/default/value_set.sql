WITH o AS (SELECT
EXISTS (SELECT 1 FROM dlock_held WHERE name = $1 AND owner = $2 AND
expires_at > clock_timestamp())
AS ours),
w AS (INSERT INTO dlock_leaders AS x (name, fence, value) SELECT $1,
$3::bigint, $4 FROM o WHERE o.ours ON CONFLICT (name) DO UPDATE SET
fence = excluded.fence, value = excluded.value WHERE x.fence <=
excluded.fence AND
EXISTS (SELECT 1 FROM dlock_held WHERE name = $1 AND owner = $2 AND
expires_at > clock_timestamp())
RETURNING 1),
n AS (SELECT pg_notify(
'dlock_' || hashtextextended($1, 0)::text
, '') FROM o WHERE o.ours)
SELECT (SELECT count(*) FROM w) = 1, (SELECT count(*) FROM w), (SELECT
count(*) FROM n) FROM o
