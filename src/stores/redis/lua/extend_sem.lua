-- extend_sem.lua - renew a semaphore holder's lease (S_EXT_SEM): 1, or 0
-- when it holds no slot.  KEYS and ARGV as acquire.lua's.
-- @include now.lua
-- @include fn_ext.lua
return ext(KEYS[7], '\255sem', ARGV[1], ARGV[2], now)
