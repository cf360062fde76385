-- ttl.lua - the lease left of an exclusive lock in ms if it is ours
-- (S_TTL), else -3.  KEYS and ARGV as acquire.lua's.
if redis.call('GET', KEYS[1]) == ('dlock1:' .. ARGV[1]) then
  return redis.call('PTTL', KEYS[1])
end
return -3
