-- force.lua - break a name's lock, whoever holds it (S_FORCE): the
-- number of holders it had; the queue's head gets it.  KEYS as
-- acquire.lua's.
-- @include now.lua
-- @include fn_fence.lua
-- @include fn_handoff.lua
local n = redis.call('EXISTS', KEYS[1])
local cur = redis.call('GET', KEYS[1])
if cur == '\255shared' or cur == '\255sem' then n = 0 end
n = n + redis.call('ZCARD', KEYS[3]) + redis.call('ZCARD', KEYS[7])
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4], KEYS[7])
pass_on(now, true)
return n
