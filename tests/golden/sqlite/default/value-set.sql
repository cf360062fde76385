INSERT OR REPLACE INTO dlock_leaders (name, fence, value) VALUES (?1, ?2, ?3)
