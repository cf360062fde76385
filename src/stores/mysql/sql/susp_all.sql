-- suspensions (runs.c): every record (the prefix is matched in C, on
-- full_name's bytes, as the run records' lists check it).
SELECT full_name, by_whom, since_ms, reason FROM {{susp}} ORDER BY full_name
