-- Make tok the exclusive holder, with fence f.  Its value is
-- "dlock1:" .. tok (see acquire.lua).
local function hold(tok, ttl, host, pid, f, now)
  redis.call('SET', KEYS[1], 'dlock1:' .. tok, 'PX', ttl)
  redis.call('DEL', KEYS[4])
  redis.call('HSET', KEYS[4], 'fence', f, 'host', host, 'pid', pid,
    'since', now)
  redis.call('PEXPIRE', KEYS[4], ttl)
end
