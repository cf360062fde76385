SELECT name, by_whom, since_ms, reason FROM dlock_suspensions WHERE typeof(name) = 'text' ORDER BY name
