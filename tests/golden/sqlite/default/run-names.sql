INSERT INTO dlock_run_names (name, last_start, last_fence) VALUES (?1, ?2, ?3) ON CONFLICT (name) DO UPDATE SET last_start = excluded.last_start, last_fence = excluded.last_fence
