local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local mine
if ARGV[2] == 'x' then
  mine = redis.call('GET', KEYS[1]) == 'dlock1:' .. ARGV[1]
else
  local z, mark = KEYS[2], '\255shared'
  if ARGV[2] == 'm' then z, mark = KEYS[3], '\255sem' end
  local s = redis.call('ZSCORE', z, ARGV[1])
  mine = s and tonumber(s) > now and
    redis.call('GET', KEYS[1]) == mark
end
if not mine then return 0 end
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[4], 'fence', ARGV[3], 'value', ARGV[4])
else
  redis.call('DEL', KEYS[4])
end
redis.pcall('PUBLISH', KEYS[1] .. '\255release', 'v')
return 1
