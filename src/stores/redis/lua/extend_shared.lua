-- extend_shared.lua - renew a reader's lease (S_EXT_SHARED): 1, or 0
-- when it holds no place.  KEYS and ARGV as acquire.lua's.
-- @include now.lua
-- @include fn_ext.lua
return ext(KEYS[3], '\255shared', ARGV[1], ARGV[2], now)
