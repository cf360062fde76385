local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local i, n = 0, 1
while true do
  local part = redis.call('LRANGE', KEYS[4], i, i + n - 1)
  for j, v in ipairs(part) do
    local f, s, rest =
      string.match(v, '^(%d+) (%d+) %d+ %d+ %-?%d+ (.*)$')
    if f == ARGV[1] then
      v = f .. ' ' .. s .. ' ' .. string.format('%d', now) .. ' ' ..
        ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. rest
      redis.call('LSET', KEYS[4], i + j - 1, v)
      if ARGV[2] == '1' and ARGV[3] == '0' then
        redis.call('HSET', KEYS[5], 'ok', v)
      end
      return 1
    end
  end
  if #part < n then return 0 end
  i, n = i + n, 100
end
