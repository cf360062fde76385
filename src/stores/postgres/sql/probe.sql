-- dlock check (dlock_store_probe(), probe.c): the server's clock in ms
-- since the epoch; the objects of ddl.sql that are missing ('' when
-- none); and the run tables not made yet (the first run, election or
-- suspension makes them), or run tables from before keep_runs or its
-- uncounted column (the first run or keep setting adds its columns).
SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint,
concat_ws(', ',
CASE WHEN to_regclass('dlock_locks') IS NULL THEN 'dlock_locks' END,
CASE WHEN to_regclass('dlock_fences') IS NULL THEN 'dlock_fences' END,
CASE WHEN to_regclass('dlock_held') IS NULL THEN 'dlock_held' END,
CASE WHEN to_regclass('dlock_fence_seq') IS NULL THEN 'dlock_fence_seq' END,
CASE WHEN to_regproc('dlock_fence_raise_v1') IS NULL
THEN 'dlock_fence_raise_v1()' END,
CASE WHEN to_regproc('dlock_sem_acquire_v2') IS NULL
THEN 'dlock_sem_acquire_v2()' END),
concat_ws(', ',
CASE WHEN to_regclass('dlock_runs') IS NULL THEN 'dlock_runs' END,
CASE WHEN to_regclass('dlock_run_names') IS NULL THEN 'dlock_run_names' END,
CASE WHEN to_regclass('dlock_leaders') IS NULL THEN 'dlock_leaders' END,
CASE WHEN to_regclass('dlock_suspensions') IS NULL
THEN 'dlock_suspensions' END,
CASE WHEN to_regclass('dlock_run_names') IS NOT NULL AND NOT EXISTS
(SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('dlock_run_names')
AND attname = 'kept_fence' AND NOT attisdropped)
THEN 'dlock_run_names.keep_runs' WHEN to_regclass('dlock_run_names') IS NOT
NULL AND NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid =
to_regclass('dlock_run_names') AND attname = 'uncounted' AND NOT
attisdropped) THEN 'dlock_run_names.uncounted' END)
