-- MEMORY, so empty after any restart: a row once {{fseq}} is seeded since
-- the server started.
CREATE TABLE IF NOT EXISTS {{boot}} (
    id TINYINT NOT NULL PRIMARY KEY -- 1: {{fseq}} is seeded since the server started
) ENGINE=MEMORY
