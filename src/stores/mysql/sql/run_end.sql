-- run_end (runs.c, end_op): the run's result ? and status ? (key ?,
-- fence ?); {{ok}}: run_end_ok.sql after a success, else nothing.
START TRANSACTION; UPDATE {{runs}} SET end_ms = {{runnow}}, result = ?, status = ? WHERE name = ? AND fence = ?{{ok}}; COMMIT
