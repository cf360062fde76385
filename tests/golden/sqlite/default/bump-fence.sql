INSERT INTO dlock_fences (name, fence) VALUES (?1, 1) ON CONFLICT (name) DO UPDATE SET fence = fence + 1 RETURNING fence
