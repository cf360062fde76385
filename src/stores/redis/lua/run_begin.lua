-- run_begin.lua - record the start of a run of a job under a lock
-- (runs.c, S_RUN_BEGIN).
--
-- KEYS: 1 lock, 2 readers, 3 semaphore holders, 4 runs, 5 summary,
-- 6 the name's suspension record (all in one slot).  ARGV: 1 token,
-- 2 what lk is ('x' a lock, 's' a shared lock, 'm' a semaphore slot),
-- 3 once ('1'), 4 period ms, 5 fence, 6 pid,
-- 7 host.  Ownership is what the release and extend scripts check: the
-- lock key holds "dlock1:" + the token, or a live place among the
-- holders while the lock key holds their marker.  Answers {-1}: not
-- ours; {2, by, since}: skip, the name is suspended (suspend.lua; looked
-- at before any rule, nothing written; fn_susp.lua says what the two can
-- be); {0, record}: skip, the run that decided it ("" unknown);
-- {1, record}: recorded, the run before it ("" none).
--
-- What a run costs does not grow with the runs kept (up to
-- {{runs_kept_max}}, the summary's keep field, fn_keep.lua): only the
-- newest run can still be running (each begin marks the one before), so
-- only the list's head is looked at; LPUSH puts the new one in front and
-- LTRIM drops what it put over the setting from the tail, the oldest, at
-- the cost of what it drops (one run, or none).  Lists know their length.
-- @include now.lua
-- @include fn_susp.lua
-- @include fn_keep.lua
local mine
if ARGV[2] == 'x' then
  mine = redis.call('GET', KEYS[1]) == 'dlock1:' .. ARGV[1]
else
  local z, mark = KEYS[2], '\255shared'
  if ARGV[2] == 'm' then z, mark = KEYS[3], '\255sem' end
  local s = redis.call('ZSCORE', z, ARGV[1])
  mine = s and tonumber(s) > now and
    redis.call('GET', KEYS[1]) == mark
end
if not mine then return {-1} end
local sus = susp(KEYS[6])
if sus then return {2, sus[1], sus[2]} end
local sum = redis.call('HMGET', KEYS[5], 'start', 'ok', 'keep')
if ARGV[3] == '1' and sum[2] then return {0, sum[2]} end
local p, st = tonumber(ARGV[4]), tonumber(sum[1] or '')
-- now - st < p / 2, without the fraction
if p > 0 and st and (now - st) * 2 < p then
  return {0, redis.call('LINDEX', KEYS[4], 0) or ''}
end
local head = redis.call('LINDEX', KEYS[4], 0)
if head then
  local a, rest = string.match(head, '^(%d+ %d+ %d+) 0 (.*)$')
  if a then
    head = a .. ' 4 ' .. rest
    redis.call('LSET', KEYS[4], 0, head)
  end
end
local ms = string.format('%d', now)
redis.call('LPUSH', KEYS[4],
  ARGV[5] .. ' ' .. ms .. ' 0 0 -1 ' .. ARGV[6] .. ' ' .. ARGV[7])
redis.call('LTRIM', KEYS[4], 0, keep_of(sum[3]) - 1)
redis.call('HSET', KEYS[5], 'start', ms)
return {1, head or ''}
