-- release --force: how many of the sessions it ended are still there.
-- $1 their pids, an array literal ("{1,2}").
SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])
