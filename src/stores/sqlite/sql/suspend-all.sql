-- suspend-all.sql - every suspension, for dlock_suspensions() (the prefix
-- is matched in C, as the other lists do: LIKE would take % and _ in it).
SELECT name, by_whom, since_ms, reason FROM dlock_suspensions ORDER BY name
