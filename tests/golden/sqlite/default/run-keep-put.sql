INSERT INTO dlock_run_keep (name, keep, kept) VALUES (?1, ?2, ?3) ON CONFLICT (name) DO UPDATE SET keep = excluded.keep, kept = excluded.kept
