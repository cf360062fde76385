local function susp(k)
  local ty = redis.call('TYPE', k)['ok']
  if ty == 'none' then return nil end
  if ty ~= 'hash' then return {0, 0, 0} end
  return redis.call('HMGET', k, 'by', 'since', 'reason')
end
local cur = susp(KEYS[1])
if not cur then return {0} end
redis.call('DEL', KEYS[1])
return {1, cur[1], cur[2], cur[3]}
