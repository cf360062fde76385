-- rollback.sql - undoes a begin.sql transaction that failed.
ROLLBACK
