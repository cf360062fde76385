SELECT s.old FROM (SELECT current_setting('lock_timeout') AS old,
set_config('lock_timeout', $2::text, true) AS c OFFSET 0) s, LATERAL
(SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0)), s.c) l
