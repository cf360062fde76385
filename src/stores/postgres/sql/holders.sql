-- The dlock holders in our way, by their rows (Q_HOLDERS): how many, the
-- most ms left of a live lease, how many past their lease, a holder's
-- host, pid, backend and limit.  $1 name, $2 shared.
SELECT count(*), max(ceil(extract(epoch FROM t.expires_at -
clock_timestamp()) * 1000)::bigint) FILTER (WHERE t.expires_at >
clock_timestamp()), count(*) FILTER (WHERE t.expires_at <=
clock_timestamp()), max(t.host), max(t.pid), max(t.backend_pid),
max(t.lim) FROM dlock_held t WHERE t.name = $1 AND (NOT $2::boolean
OR NOT t.shared) AND
-- @include part-holds.sql
