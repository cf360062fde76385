-- A candidate's release (held.c): wake the name's observers (elect.c),
-- after the release committed, so that what they read shows it.  $1 the
-- name.
SELECT pg_notify(
-- @include part-channel.sql
, '')
