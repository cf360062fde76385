SELECT DISTINCT name FROM dlock_locks WHERE starts_with(name, $1) AND
expires_at > clock_timestamp() ORDER BY name
