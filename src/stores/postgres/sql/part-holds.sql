-- Fragment: the backend of row t holds the name's key {{key}}.
EXISTS (SELECT 1 FROM pg_locks p WHERE p.pid = t.backend_pid AND
-- @include part-keymatch.sql
= {{key}})
