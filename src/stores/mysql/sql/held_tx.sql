-- Session mode, on the lock's own session: a run record transaction
-- ({{tx}}: run_begin.sql or run_end.sql) in one packet with its
-- session's idle bound raised to a lease (the first ?) before it and set
-- back to ?timeout= (the last ?) after it (runs.c, held_idle).
{{set_idle}}; {{tx}}; {{set_idle}}
