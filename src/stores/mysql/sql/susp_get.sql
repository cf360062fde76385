-- suspension (runs.c): a name's record (key ?, full name ?): who, since
-- when, why; no row: not suspended.
SELECT by_whom, since_ms, reason FROM {{susp}} WHERE name = ? AND full_name = ?
