-- extend.lua - renew an exclusive lock's lease to ARGV[2] ms if it is
-- still ours (S_EXT): 1, else 0.  KEYS and ARGV as acquire.lua's.
--
-- A lock found gone (not taken over: gone, as after a FLUSHALL or a
-- restart without persistence) wakes its waiters at once: they were
-- sleeping until the lease they last saw, and nothing else will tell
-- them the name is free.
local cur = redis.call('GET', KEYS[1])
if cur == ('dlock1:' .. ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[4], ARGV[2])
  return 1
end
if not cur then
  redis.pcall('PUBLISH', KEYS[1] .. '\255release', 'r')
end
return 0
