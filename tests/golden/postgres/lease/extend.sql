UPDATE dlock_locks SET expires_at = clock_timestamp() + $3::bigint *
interval '1 millisecond' WHERE name = $1 AND owner = $2 AND
expires_at > clock_timestamp()
