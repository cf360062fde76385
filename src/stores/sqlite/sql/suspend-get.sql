-- suspend-get.sql - name ?1's suspension: who, since when, why; no row:
-- not suspended (run_begin, suspend and resume read it in their
-- transaction).
SELECT by_whom, since_ms, reason FROM dlock_suspensions WHERE name = ?1
