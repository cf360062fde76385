-- The statement of idle_set.sql's assignments (runs.c: around a held
-- lock's run record transaction): ? the bound in seconds.
SET {{idle_set}}
