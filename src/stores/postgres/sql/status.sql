-- Live holders of a name (Q_STATUS): shared, host, pid, ms left, acquired
-- (ms since the epoch), limit.  $1 name.
SELECT t.shared, t.host, t.pid, greatest(1, ceil(extract(epoch FROM
t.expires_at - clock_timestamp()) * 1000)::bigint),
floor(extract(epoch FROM t.acquired_at) * 1000)::bigint, t.lim FROM
dlock_held t WHERE t.name = $1 AND t.expires_at > clock_timestamp()
AND
-- @include part-holds.sql
