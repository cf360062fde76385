local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = false
if redis.call('TYPE', KEYS[1]).ok == 'string' then
  cur = redis.call('GET', KEYS[1])
end
if cur == '\255shared' or cur == '\255sem' then cur = false end
local n = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf')
local z = KEYS[3]
local m = redis.call('ZCOUNT', KEYS[7], '(' .. now, '+inf')
if m > 0 then z = KEYS[7] end
local top = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
local left = -1
if cur then left = redis.call('PTTL', KEYS[1])
elseif n + m > 0 then left = tonumber(top[2]) - now end
local h = redis.call('HMGET', KEYS[4], 'host', 'pid', 'since', 'limit')
return {cur and 1 or 0, n, left, redis.call('GET', KEYS[2]) or '0',
  h[1] or '', h[2] or '0', h[3] or '0', m, tonumber(h[4] or '0')}
