-- suspend-put.sql - suspend name ?1: by ?2, since ?3 (Unix ms), reason ?4;
-- in the transaction that found no row (suspend-get.sql).
INSERT INTO dlock_suspensions (name, by_whom, since_ms, reason)
VALUES (?1, ?2, ?3, ?4)
