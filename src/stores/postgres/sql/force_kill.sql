-- release --force (Q_FORCE_KILL): terminate those of the backends $2 that
-- hold the name's key.  $1 name, $2 int[] of backend pids.
SELECT pg_terminate_backend(p.pid) FROM pg_locks p WHERE p.pid =
ANY($2::int[]) AND p.pid <> pg_backend_pid() AND
-- @include part-keymatch.sql
= {{key}}
