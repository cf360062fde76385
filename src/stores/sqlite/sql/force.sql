-- force.sql - `dlock release --force`: every row of name ?1.
DELETE FROM dlock_locks WHERE name = ?1
