-- {{extra}} of the exclusive tries (statements.c; their lock step is
-- l): when the key was not got, what the name's rows say of the holder's
-- lease, read from the rows alone (pg_locks is not read): the most ms
-- left of the rows' leases if every row is within its lease; -1 if one
-- is past it; NULL if there is no row (a session with no dlock row holds
-- the key).  A waiter that gets a positive value waits that long without
-- the holders look (holders.sql, which reads pg_locks); any other value
-- sends the look.
, CASE WHEN l.got THEN NULL ELSE (SELECT CASE WHEN
bool_or(t.expires_at <= clock_timestamp()) THEN -1 ELSE
max(ceil(extract(epoch FROM t.expires_at - clock_timestamp()) *
1000))::bigint END FROM dlock_held t WHERE t.name = $1) END
