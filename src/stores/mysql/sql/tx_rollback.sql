-- Undo a transaction (acquire.c, runs.c).
ROLLBACK
