-- run-keep-put.sql - name ?1 keeps ?2 runs, holds ?3 now, ?4 of them
-- begun since the last count.
INSERT INTO dlock_run_keep (name, keep, kept, uncounted) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET keep = excluded.keep, kept = excluded.kept, uncounted = excluded.uncounted
