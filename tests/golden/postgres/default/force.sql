WITH u AS (UPDATE dlock_held t SET owner = CASE WHEN starts_with(
t.owner, 'broken:') THEN t.owner ELSE 'broken:' || t.owner END,
expires_at = least(t.expires_at, clock_timestamp() + greatest(
interval '1 second', (t.expires_at - clock_timestamp()) / 2)) WHERE
t.name = $1 RETURNING t.backend_pid, t.sess, t.expires_at >
clock_timestamp() AS live) SELECT CASE WHEN NOT u.live OR NOT EXISTS
(SELECT 1 FROM dlock_held o WHERE o.sess = u.sess AND o.name <> $1)
THEN u.backend_pid ELSE 0 END, u.live FROM u
