-- Add tok, with fence f, to the holders in sorted set z (readers: KEYS[3]
-- and the marker '\255shared'; a semaphore's: KEYS[7], '\255sem' and its
-- limit lim), scored by lease end; z, the info and the lock key's marker
-- live as long as the last lease.  The first holder starts a fresh info
-- hash.
local function join(z, mark, tok, ttl, host, pid, f, now, lim)
  if redis.call('EXISTS', z) == 0 then redis.call('DEL', KEYS[4]) end
  redis.call('ZADD', z, now + tonumber(ttl), tok)
  local top = tonumber(redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')[2])
  redis.call('PEXPIREAT', z, top)
  redis.call('HSET', KEYS[4], 'f:' .. tok, f, 'host', host, 'pid', pid,
    'since', now)
  if lim then redis.call('HSET', KEYS[4], 'limit', lim) end
  redis.call('PEXPIREAT', KEYS[4], top)
  redis.call('SET', KEYS[1], mark, 'PX',
    string.format('%d', math.max(1, top - now)))
end
