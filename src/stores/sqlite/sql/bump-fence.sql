-- bump-fence.sql - the next fence of name ?1 (1 for a name never held).
-- The counter lives apart from the lock rows and is never deleted.
INSERT INTO dlock_fences (name, fence) VALUES (?1, 1) ON CONFLICT (name) DO UPDATE SET fence = fence + 1 RETURNING fence
