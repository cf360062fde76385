-- Who holds the name now (expired shared and semaphore holders dropped):
-- how many, the limit they hold it with (want when a semaphore's limit
-- is unknown: its info was deleted), and whether the holder is foreign
-- (a value that is neither dlock's, "dlock1:" + 32 hex digits, nor a
-- marker).
local function holders(now, want)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now)
  local n = redis.call('ZCARD', KEYS[3])
  if n > 0 then return n, 1, false end
  n = redis.call('ZCARD', KEYS[7])
  if n > 0 then
    return n, tonumber(redis.call('HGET', KEYS[4], 'limit') or want),
      false
  end
  local cur = redis.call('GET', KEYS[1])
  if cur and cur ~= '\255shared' and cur ~= '\255sem' then
    return 1, 1, not (#cur == 39 and string.match(cur, '^dlock1:%x+$'))
  end
  return 0, 0, false
end
