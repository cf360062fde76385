INSERT INTO dlock_suspensions (name, by_whom, since_ms, reason)
VALUES (?1, ?2, ?3, ?4)
