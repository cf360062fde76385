CREATE TABLE IF NOT EXISTS `shared_locks_boot` (
    id TINYINT NOT NULL PRIMARY KEY -- 1: `shared_locks_fseq` is seeded since the server started
) ENGINE=MEMORY
