-- begin.sql - every change is one short write transaction: IMMEDIATE takes
-- SQLite's write lock at once (waiting in the busy handler), so two
-- writers never both read and then both fail to upgrade.
BEGIN IMMEDIATE
