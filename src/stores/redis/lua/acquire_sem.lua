-- acquire_sem.lua - take a slot of a semaphore of L = ARGV[6]
-- (S_ACQ_SEM).  KEYS and ARGV as acquire.lua's.
--
-- Admitted while fewer than L hold it, all with limit L; queued waiters
-- first, in order.  Ours already (a hand-off): the lease restarts now.
-- @include now.lua
-- @include fn_fence.lua
-- @include fn_handoff.lua
-- @include fn_enqueue.lua
-- @include fn_busy.lua
-- @include fn_ext.lua
local L = tonumber(ARGV[6])
if ext(KEYS[7], '\255sem', ARGV[1], ARGV[2], now) == 1 then
  return {1, tonumber(redis.call('HGET', KEYS[4], 'f:' .. ARGV[1])
    or '0')}
end
local function look()
  local n, lim, foreign = holders(now, L)
  if foreign then return busy(now, redis.call('PTTL', KEYS[1]), false) end
  if n > 0 and lim ~= L then return {-1, lim, n} end
  if n >= L then return busy(now, soonest(KEYS[7], now), true) end
  return nil
end
local r = look()
if r then return r end
if ARGV[5] ~= 'u' then
  local gave, mine = handoff(now, ARGV[1])
  if mine then return {1, mine} end
  r = look()
  if r then return r end
  -- Queued waiters that do not fit yet (a lock waiter behind the
  -- holders) are not passed.
  if redis.call('EXISTS', KEYS[5]) == 1 then
    return busy(now, soonest(KEYS[7], now), true)
  end
end
local f = fence(now, t)
join(KEYS[7], '\255sem', ARGV[1], ARGV[2], ARGV[3], ARGV[4], f, now, L)
return {1, f}
