SELECT pg_advisory_lock(hashtextextended($1::text, $2::integer + 1))
FROM (SELECT set_config('lock_timeout', $3::text, true) AS c OFFSET 0)
s
