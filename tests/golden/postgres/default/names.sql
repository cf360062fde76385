SELECT DISTINCT name FROM dlock_held WHERE starts_with(name, $1) AND
expires_at > clock_timestamp() ORDER BY name
