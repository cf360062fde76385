local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function susp(k)
  local ty = redis.call('TYPE', k)['ok']
  if ty == 'none' then return nil end
  if ty ~= 'hash' then return {0, 0, 0} end
  return redis.call('HMGET', k, 'by', 'since', 'reason')
end
local function keep_of(v)
  if type(v) ~= 'string' or not string.match(v, '^[1-9]%d?%d?%d?%d?$') then
    return 20
  end
  local n = tonumber(v)
  if n > 10000 then return 20 end
  return n
end
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
if not mine then return {-1} end
local sus = susp(KEYS[6])
if sus then return {2, sus[1], sus[2]} end
local sum = redis.call('HMGET', KEYS[5], 'start', 'ok', 'keep')
if ARGV[3] == '1' and sum[2] then return {0, sum[2]} end
local p, st = tonumber(ARGV[4]), tonumber(sum[1] or '')
if p > 0 and st and (now - st) * 2 < p then
  return {0, redis.call('LINDEX', KEYS[4], 0) or ''}
end
local head = redis.call('LINDEX', KEYS[4], 0)
if head then
  local a, rest = string.match(head, '^(%d+ %d+ %d+) 0 (.*)$')
  if a then
    head = a .. ' 4 ' .. rest
    redis.call('LSET', KEYS[4], 0, head)
  end
end
local ms = string.format('%d', now)
redis.call('LPUSH', KEYS[4],
  ARGV[5] .. ' ' .. ms .. ' 0 0 -1 ' .. ARGV[6] .. ' ' .. ARGV[7])
redis.call('LTRIM', KEYS[4], 0, keep_of(sum[3]) - 1)
redis.call('HSET', KEYS[5], 'start', ms)
return {1, head or ''}
