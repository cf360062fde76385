-- kept_runs.lua - how many runs a name keeps (runs.c, S_KEPT_RUNS;
-- dlock_kept_runs()): a script, not HGET, so that a summary key of
-- another type someone planted reads as the default ({{runs_kept}})
-- instead of a WRONGTYPE error.  Writes nothing: a login without write
-- commands may run it.
--
-- KEYS: 1 the name's summary.  Answers the setting (fn_keep.lua).
-- @include fn_keep.lua
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return {{runs_kept}} end
return keep_of(redis.call('HGET', KEYS[1], 'keep'))
