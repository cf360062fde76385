SELECT t.shared, t.host, t.pid, greatest(1, ceil(extract(epoch FROM
t.expires_at - clock_timestamp()) * 1000)::bigint),
floor(extract(epoch FROM t.acquired_at) * 1000)::bigint, t.lim FROM
dlock_locks t WHERE t.name = $1 AND t.expires_at > clock_timestamp()
