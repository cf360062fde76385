-- Release (Q_RELEASE_X, Q_RELEASE_S: {{unlock_fn}} is pg_advisory_unlock
-- or pg_advisory_unlock_shared): delete our row and let the key go.  A
-- holder row broken by release --force (force.sql) is renamed to
-- 'broken:' || owner; its holder's release still deletes it (so its
-- session, which may take the name again, keeps no row it does not
-- hold), and is told it was not live.  $1 name, $2 owner.
WITH d AS (DELETE FROM dlock_held WHERE name = $1 AND owner IN ($2,
'broken:' || $2) RETURNING owner = $2 AND expires_at >
clock_timestamp() AS live) SELECT (SELECT bool_or(live) FROM d),
{{unlock_fn}}({{key}})
