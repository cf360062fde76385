CREATE TABLE IF NOT EXISTS "app_locks_boot" (
    id TINYINT NOT NULL PRIMARY KEY -- 1: "app_locks_fseq" is seeded since the server started
) ENGINE=MEMORY
