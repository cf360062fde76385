-- release.lua - let go of an exclusive lock if it is still ours (S_REL):
-- 1, else 0.  KEYS and ARGV as acquire.lua's.
--
-- The uncontended release first: ours, and no queue or waiters keys (one
-- EXISTS): handoff() would find nobody, so the name's channel hears of
-- it, as pass_on() does, without TIME or the functions of a hand-off.
if redis.call('GET', KEYS[1]) ~= ('dlock1:' .. ARGV[1]) then return 0 end
if redis.call('EXISTS', KEYS[5], KEYS[6]) == 0 then
  redis.call('DEL', KEYS[1], KEYS[4])
  redis.pcall('PUBLISH', KEYS[1] .. '\255release', 'r')
  return 1
end
-- Ours, with a queue: the lock is let go and handed on, with the latest
-- lease end a waiter was told (fn_busy.lua), read before the info goes.
local seen = tonumber(redis.call('HGET', KEYS[4], 'seen') or '')
redis.call('DEL', KEYS[1], KEYS[4])
-- @include now.lua
-- @include fn_fence.lua
-- @include fn_handoff.lua
pass_on(now, false, seen)
return 1
