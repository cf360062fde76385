-- Release, lease mode: delete our row; whether it was live.  $1 name,
-- $2 owner.
DELETE FROM dlock_locks WHERE name = $1 AND owner = $2 RETURNING
expires_at > clock_timestamp()
