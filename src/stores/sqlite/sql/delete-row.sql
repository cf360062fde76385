-- delete-row.sql - one holder's row (?1 name, ?2 owner token), whatever its
-- lease: a dead holder's row cleared by try_acquire, or our own row tidied
-- away when its lease ran out (the lock is LOST).
DELETE FROM dlock_locks WHERE name = ?1 AND owner = ?2
