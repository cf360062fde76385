-- release --force, lease mode: its rows are all there is.  $1 name: each
-- holder's backend (0) and whether its lease was live.
DELETE FROM dlock_locks WHERE name = $1 RETURNING backend_pid,
expires_at > clock_timestamp()
