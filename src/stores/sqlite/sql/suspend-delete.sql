-- suspend-delete.sql - lift name ?1's suspension.
DELETE FROM dlock_suspensions WHERE name = ?1
