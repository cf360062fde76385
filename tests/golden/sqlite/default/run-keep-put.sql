INSERT INTO dlock_run_keep (name, keep, kept, uncounted) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET keep = excluded.keep, kept = excluded.kept, uncounted = excluded.uncounted
