local function keep_of(v)
  if type(v) ~= 'string' or not string.match(v, '^[1-9]%d?%d?%d?%d?$') then
    return 20
  end
  local n = tonumber(v)
  if n > 10000 then return 20 end
  return n
end
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return 20 end
return keep_of(redis.call('HGET', KEYS[1], 'keep'))
