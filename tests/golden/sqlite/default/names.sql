SELECT DISTINCT name FROM dlock_locks ORDER BY name
