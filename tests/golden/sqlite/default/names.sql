SELECT DISTINCT name FROM dlock_locks WHERE name >= ?1 AND name < ?2 ORDER BY name
