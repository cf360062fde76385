WITH d AS (DELETE FROM dlock_held WHERE name = $1 AND owner = $2
RETURNING expires_at > clock_timestamp() AS live) SELECT (SELECT
bool_or(live) FROM d), pg_advisory_unlock(hashtextextended($1::text, 0))
