-- An exclusive lock's release (Q_RELEASE_X1), by the row's whole primary
-- key (one index probe): a row broken by release --force is not found,
-- and then the client deletes it with drop_broken.sql.  $1 name, $2 owner.
WITH d AS (DELETE FROM dlock_held WHERE name = $1 AND owner = $2
RETURNING expires_at > clock_timestamp() AS live) SELECT (SELECT
bool_or(live) FROM d), pg_advisory_unlock({{key}})
