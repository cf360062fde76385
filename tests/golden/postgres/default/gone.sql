SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])
