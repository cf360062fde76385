PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
