-- ttl_sem.lua - the lease left of a semaphore holder's slot (S_TTL_SEM),
-- or -3 when it has none.  KEYS and ARGV as acquire.lua's.
-- @include now.lua
local s = redis.call('ZSCORE', KEYS[7], ARGV[1])
if s and tonumber(s) > now and
   redis.call('GET', KEYS[1]) == '\255sem' then
  return tonumber(s) - now
end
return -3
