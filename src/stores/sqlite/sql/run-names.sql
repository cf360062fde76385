-- run-names.sql - name ?1's summary row after a run began: its start ?2
-- and fence ?3 (ok_fence is left as it is).
INSERT INTO dlock_run_names (name, last_start, last_fence) VALUES (?1, ?2, ?3) ON CONFLICT (name) DO UPDATE SET last_start = excluded.last_start, last_fence = excluded.last_fence
