-- wal.sql - run once per open, before the tables.  WAL: readers never wait
-- for the writer.  FULL: a lock handed out is on disk before anyone is
-- told, so a crash never hands it out twice (and never lets a fence go
-- back).
PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
