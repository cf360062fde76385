-- dlock_pg_xact_lock() with a wait (xact.c): under lock_timeout $2 (ms,
-- 0: forever), set for the savepoint only; answers the old lock_timeout,
-- put back after.  $1 name.
SELECT s.old FROM (SELECT current_setting('lock_timeout') AS old,
set_config('lock_timeout', $2::text, true) AS c OFFSET 0) s, LATERAL
(SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0)), s.c) l
