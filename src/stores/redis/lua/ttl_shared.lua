-- ttl_shared.lua - the lease left of a reader's place (S_TTL_SHARED), or
-- -3 when it has none.  KEYS and ARGV as acquire.lua's.
-- @include now.lua
local s = redis.call('ZSCORE', KEYS[3], ARGV[1])
if s and tonumber(s) > now and
   redis.call('GET', KEYS[1]) == '\255shared' then
  return tonumber(s) - now
end
return -3
