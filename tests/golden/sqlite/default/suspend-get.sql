SELECT by_whom, since_ms, reason FROM dlock_suspensions WHERE name = ?1
