DELETE FROM dlock_locks WHERE name = $1 RETURNING backend_pid,
expires_at > clock_timestamp()
