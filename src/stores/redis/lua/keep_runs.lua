-- keep_runs.lua - record how many runs a name keeps and drop those over
-- it, oldest first, in one step (runs.c, S_KEEP_RUNS; dlock_keep_runs()).
--
-- KEYS: 1 runs, 2 summary (run_begin.lua's 4 and 5, one slot).  ARGV: 1 n
-- (1..{{runs_kept_max}}, checked by the caller).  The setting is the
-- summary's keep field; the list's tail is its oldest, so LTRIM drops
-- them at the cost of what it drops.  Answers the runs kept now, or -1
-- (nothing written) when a key of another type is in the way.
local rt = redis.call('TYPE', KEYS[1])['ok']
local st = redis.call('TYPE', KEYS[2])['ok']
if (rt ~= 'none' and rt ~= 'list') or (st ~= 'none' and st ~= 'hash') then
  return -1
end
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[1]) - 1)
redis.call('HSET', KEYS[2], 'keep', ARGV[1])
return redis.call('LLEN', KEYS[1])
