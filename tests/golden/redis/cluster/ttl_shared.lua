local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local s = redis.call('ZSCORE', KEYS[3], ARGV[1])
if s and tonumber(s) > now and
   redis.call('GET', KEYS[1]) == '\255shared' then
  return tonumber(s) - now
end
return -3
