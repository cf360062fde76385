local rt = redis.call('TYPE', KEYS[1])['ok']
local st = redis.call('TYPE', KEYS[2])['ok']
if (rt ~= 'none' and rt ~= 'list') or (st ~= 'none' and st ~= 'hash') then
  return -1
end
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[1]) - 1)
redis.call('HSET', KEYS[2], 'keep', ARGV[1])
return redis.call('LLEN', KEYS[1])
