-- acquire_shared.lua - take a shared (read) lock (S_ACQ_SHARED).  KEYS
-- and ARGV as acquire.lua's.
--
-- Readers do not queue, and do not pass queued waiters: a writer that
-- waits is not starved by readers that keep coming.  Answers {1, fence},
-- {0, lease left, 1 if a dlock holder}, or {-1, limit, holders} when the
-- name is held with another limit.
-- @include now.lua
-- @include fn_fence.lua
-- @include fn_handoff.lua
local n, lim = holders(now, 1)
if n > 0 and lim ~= 1 then return {-1, lim, n} end
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= '\255shared' and cur ~= '\255sem' then
  return {0, redis.call('PTTL', KEYS[1]),
  (#cur == 39 and string.match(cur, '^dlock1:%x+$')) and 1 or 0} end
local mine = redis.call('HGET', KEYS[4], 'f:' .. ARGV[1])
if mine and redis.call('ZSCORE', KEYS[3], ARGV[1]) then
  return {1, tonumber(mine)}
end
if ARGV[5] ~= 'u' and redis.call('EXISTS', KEYS[5]) == 1 then
  local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  if top[2] then return {0, tonumber(top[2]) - now, 1} end
  if handoff(now, '') then
    return {0, redis.call('PTTL', KEYS[1]), 1}
  end
end
local f = fence(now, t)
join(KEYS[3], '\255shared', ARGV[1], ARGV[2], ARGV[3], ARGV[4], f, now)
return {1, f}
