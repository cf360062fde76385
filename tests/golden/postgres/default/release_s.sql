WITH d AS (DELETE FROM dlock_held WHERE name = $1 AND owner IN ($2,
'broken:' || $2) RETURNING owner = $2 AND expires_at >
clock_timestamp() AS live) SELECT (SELECT bool_or(live) FROM d),
pg_advisory_unlock_shared(hashtextextended($1::text, 0))
