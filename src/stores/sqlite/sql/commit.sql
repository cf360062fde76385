-- commit.sql - ends a begin.sql transaction.
COMMIT
