local function susp(k)
  local ty = redis.call('TYPE', k)['ok']
  if ty == 'none' then return nil end
  if ty ~= 'hash' then return {0, 0, 0} end
  return redis.call('HMGET', k, 'by', 'since', 'reason')
end
local cur = susp(KEYS[1])
if cur then return {1, cur[1], cur[2], cur[3]} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'by', ARGV[1], 'since',
  string.format('%d', now), 'reason', ARGV[2])
return {0}
