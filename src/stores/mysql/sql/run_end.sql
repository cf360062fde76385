-- run_end (runs.c, end_op): the run's result %d and status %d (key %s,
-- fence %llu); {{ok}}: run_end_ok.sql after a success, else nothing.
START TRANSACTION; UPDATE {{runs}} SET end_ms = {{runnow}}, result = %d, status = %d WHERE name = %s AND fence = %llu{{ok}}; COMMIT
