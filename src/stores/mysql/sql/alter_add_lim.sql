-- Semaphores' columns, added by a client that may ALTER the table
-- (nullable: rows of older clients and of its-mieger's library are
-- limit-1 holders).
ALTER TABLE {{table}} ADD COLUMN lim INT NULL, ADD COLUMN slot INT NULL
