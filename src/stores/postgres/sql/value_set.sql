-- value_set (elect.c): record a leader's value under its term, only if
-- lk's row ({{table}}) is still ours and within its lease, replacing
-- the name's earlier record (any fence), and wake the name's observers
-- (NOTIFY on part-channel.sql's channel, delivered at commit: a wake-up
-- only, with no payload).  $1 the name, $2 the owner token, $3 the
-- fence, $4 the value (NULL: a leader without one, or with an empty
-- one).  Ownership is checked again when the record's row is locked (a
-- row lock waited for re-evaluates the DO UPDATE's WHERE, on a later
-- clock_timestamp()): a statement that began just before its lease ran
-- out and waited behind the next leader's value cannot write over it.
-- The clock covers a lease that ran out, not a lock broken (release
-- --force) while the statement was on its way: its snapshot still shows
-- the row ours.  So a record is also never replaced by an earlier term's
-- (fences come from one sequence, for every name and both modes): the
-- next leader's record, once there, stays.
-- Answers one row: written (ours, and the record is ours), then the
-- rows written and the notifications sent.
WITH o AS (SELECT
-- @include part-ours.sql
AS ours),
w AS (INSERT INTO dlock_leaders AS x (name, fence, value) SELECT $1,
$3::bigint, $4 FROM o WHERE o.ours ON CONFLICT (name) DO UPDATE SET
fence = excluded.fence, value = excluded.value WHERE x.fence <=
excluded.fence AND
-- @include part-ours.sql
RETURNING 1),
n AS (SELECT pg_notify(
-- @include part-channel.sql
, '') FROM o WHERE o.ours)
SELECT (SELECT count(*) FROM w) = 1, (SELECT count(*) FROM w), (SELECT
count(*) FROM n) FROM o
