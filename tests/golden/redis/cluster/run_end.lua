local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('LRANGE', KEYS[4], 0, -1)
for i, v in ipairs(all) do
  local f, s, rest =
    string.match(v, '^(%d+) (%d+) %d+ %d+ %-?%d+ (.*)$')
  if f == ARGV[1] then
    v = f .. ' ' .. s .. ' ' .. string.format('%d', now) .. ' ' ..
      ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. rest
    redis.call('LSET', KEYS[4], i - 1, v)
    if ARGV[2] == '1' and ARGV[3] == '0' then
      redis.call('HSET', KEYS[5], 'ok', v)
    end
    return 1
  end
end
return 0
