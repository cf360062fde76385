-- leave.lua - a wait that ends without the lock leaves the queue
-- (S_LEAVE); a hand-off that crossed its end (the lock or a slot is
-- ours) is passed on at once: 1 if there was one, else 0.  KEYS and ARGV
-- as acquire.lua's.
-- @include now.lua
-- @include fn_fence.lua
-- @include fn_handoff.lua
-- @include fn_unjoin.lua
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1], 'l:' .. ARGV[1], 'c:' .. ARGV[1])
if redis.call('ZCARD', KEYS[5]) == 0 then redis.call('DEL', KEYS[6]) end
if redis.call('ZSCORE', KEYS[7], ARGV[1]) then
  unjoin(KEYS[7], '\255sem', ARGV[1], now)
  pass_on(now, true)
  return 1
end
-- Let go of an exclusive lock if it is still ours.
if redis.call('GET', KEYS[1]) == ('dlock1:' .. ARGV[1]) then
  redis.call('DEL', KEYS[1], KEYS[4])
  pass_on(now, false)
  return 1
end
return 0
