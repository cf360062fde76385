SELECT name, by_whom, since_ms, reason FROM dlock_suspensions ORDER BY name
