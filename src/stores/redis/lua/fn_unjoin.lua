-- Take tok off the holders in z (marked by mark on the lock key): the
-- marker goes with the last of them.  Returns whether tok held a live
-- place, and whether z is now empty.
local function unjoin(z, mark, tok, now)
  local s = redis.call('ZSCORE', z, tok)
  redis.call('ZREM', z, tok)
  redis.call('HDEL', KEYS[4], 'f:' .. tok)
  redis.call('ZREMRANGEBYSCORE', z, '-inf', now)
  local marked = redis.call('GET', KEYS[1]) == mark
  local top = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
  if not top[2] then
    if marked then redis.call('DEL', KEYS[1]) end
    if redis.call('EXISTS', KEYS[1]) == 0 then
      redis.call('DEL', KEYS[4])
    end
  elseif marked then
    redis.call('PEXPIREAT', KEYS[1], tonumber(top[2]))
  end
  return s and tonumber(s) > now, not top[2]
end
