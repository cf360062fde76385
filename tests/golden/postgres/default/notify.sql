SELECT pg_notify(
'dlock_' || hashtextextended($1, 0)::text
, '')
