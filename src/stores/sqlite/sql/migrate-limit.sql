-- migrate-limit.sql - files made by dlock 0.1 and 0.2 have no limit
-- column: init() adds it (under the write lock, after has-limit.sql said it
-- is missing).  Their rows (and those of a 0.2 client still running, which
-- knows no semaphores and takes any row as a conflict) are locks: limit 1.
ALTER TABLE dlock_locks ADD COLUMN "limit" INTEGER NOT NULL DEFAULT 1
