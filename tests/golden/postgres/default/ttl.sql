SELECT greatest(1, ceil(extract(epoch FROM expires_at -
clock_timestamp()) * 1000)::bigint) FROM dlock_held WHERE name = $1 AND
owner = $2 AND expires_at > clock_timestamp()
