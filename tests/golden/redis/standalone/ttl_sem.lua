local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local s = redis.call('ZSCORE', KEYS[7], ARGV[1])
if s and tonumber(s) > now and
   redis.call('GET', KEYS[1]) == '\255sem' then
  return tonumber(s) - now
end
return -3
