-- release_shared.lua - a reader lets go (S_REL_SHARED): 1 if it held a
-- live place, else 0; the last one out hands the name on.  KEYS and ARGV
-- as acquire.lua's.
-- @include now.lua
-- @include fn_fence.lua
-- @include fn_handoff.lua
-- @include fn_unjoin.lua
local held, empty = unjoin(KEYS[3], '\255shared', ARGV[1], now)
if empty and redis.call('EXISTS', KEYS[1]) == 0 then
  pass_on(now, false)
end
return held and 1 or 0
