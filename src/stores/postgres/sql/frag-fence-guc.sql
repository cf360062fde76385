-- {{fence_guc}} (statements.c says why): the name of the setting that
-- holds this session's copy of the durable fence ceiling, named after
-- the backend's pid.
'dlock.fence_ceiling_' || pg_backend_pid()
