-- The fences (MariaDB 10.3 and later): one SEQUENCE for all names, so a
-- fence is one NEXTVAL, no row to lock or write.  It may jump forward
-- (CACHE: a restart skips what was cached) and, after a crash, go back
-- (its last reservations may not have reached the disk), so it is seeded
-- again after every server start, before its first use (fseq_seed_*.sql).
CREATE SEQUENCE IF NOT EXISTS {{fseq}} CACHE 1000
