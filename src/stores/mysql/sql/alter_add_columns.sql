-- For a table made by its-mieger/mysql-shared-locks: dlock's columns.
-- `dlock init --print` prints it commented out, for a DBA.
ALTER TABLE {{table}}
    ADD COLUMN owner CHAR(32) CHARACTER SET ascii NULL,
    ADD COLUMN fence BIGINT UNSIGNED NULL,
    ADD COLUMN expires_ms BIGINT NULL,
    ADD COLUMN acquired_ms BIGINT NULL,
    ADD COLUMN host VARCHAR(255) CHARACTER SET utf8mb4 NULL,
    ADD COLUMN pid BIGINT NULL,
    ADD COLUMN full_name VARBINARY(1024) NULL,
    ADD COLUMN lim INT NULL,
    ADD COLUMN slot INT NULL
