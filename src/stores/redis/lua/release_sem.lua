-- release_sem.lua - a semaphore's holder lets go of its slot
-- (S_REL_SEM): 1 if it held a live place, else 0.  A slot freed: the
-- queue's head may fit now.  KEYS and ARGV as acquire.lua's.
-- @include now.lua
-- @include fn_fence.lua
-- @include fn_handoff.lua
-- @include fn_unjoin.lua
local held = unjoin(KEYS[7], '\255sem', ARGV[1], now)
pass_on(now, true)
return held and 1 or 0
