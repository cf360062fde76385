DELETE FROM dlock_locks WHERE name = $1 AND owner = $2 RETURNING
expires_at > clock_timestamp()
