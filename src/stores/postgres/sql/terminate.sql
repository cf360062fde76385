-- Fence off holders past their lease (Q_TERMINATE): terminate the backend
-- of a row past its lease that still holds the key, unless the same
-- backend has a live row of the name.  $1 name, $2 shared.
SELECT pg_terminate_backend(t.backend_pid) FROM dlock_held t WHERE
t.name = $1 AND (NOT $2::boolean OR NOT t.shared) AND t.expires_at
<= clock_timestamp() AND t.backend_pid <> pg_backend_pid() AND NOT
EXISTS (SELECT 1 FROM dlock_held o WHERE o.name = $1 AND
o.backend_pid = t.backend_pid AND o.expires_at > clock_timestamp())
AND
-- @include part-holds.sql
