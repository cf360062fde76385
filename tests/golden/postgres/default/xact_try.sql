SELECT pg_try_advisory_xact_lock(hashtextextended($1::text, 0))
