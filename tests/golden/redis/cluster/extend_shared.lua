local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function ext(z, mark, tok, ttl, now)
  local s = redis.call('ZSCORE', z, tok)
  if redis.call('GET', KEYS[1]) ~= mark or not s or
     tonumber(s) <= now then
    redis.call('ZREM', z, tok)
    return 0
  end
  redis.call('ZADD', z, now + tonumber(ttl), tok)
  local top = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', z, tonumber(top[2]))
  redis.call('PEXPIREAT', KEYS[4], tonumber(top[2]))
  redis.call('PEXPIREAT', KEYS[1], tonumber(top[2]))
  return 1
end
return ext(KEYS[3], '\255shared', ARGV[1], ARGV[2], now)
