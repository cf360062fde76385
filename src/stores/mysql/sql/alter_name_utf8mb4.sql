-- For its-mieger's latin1 name column (printed commented out).
ALTER TABLE {{table}}
    MODIFY name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL
