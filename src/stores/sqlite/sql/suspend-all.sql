-- suspend-all.sql - every suspension, for dlock_suspensions() (the prefix
-- is matched in C, as the other lists do: LIKE would take % and _ in it).
-- Only TEXT names: suspend-get.sql's name = ?1 never matches another type,
-- so a planted BLOB name suspends nothing and is not listed as if it did.
SELECT name, by_whom, since_ms, reason FROM dlock_suspensions WHERE typeof(name) = 'text' ORDER BY name
