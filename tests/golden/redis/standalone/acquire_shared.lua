local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function fence(now, t)
  local f = redis.call('INCR', KEYS[2])
  local us = now * 1000 + tonumber(t[2]) % 1000
  if f < us then
    f = us
    redis.call('SET', KEYS[2], string.format('%d', f))
  end
  return f
end
local function hold(tok, ttl, host, pid, f, now)
  redis.call('SET', KEYS[1], 'dlock1:' .. tok, 'PX', ttl)
  redis.call('DEL', KEYS[4])
  redis.call('HSET', KEYS[4], 'fence', f, 'host', host, 'pid', pid,
    'since', now)
  redis.call('PEXPIRE', KEYS[4], ttl)
end
local function join(z, mark, tok, ttl, host, pid, f, now, lim)
  if redis.call('EXISTS', z) == 0 then redis.call('DEL', KEYS[4]) end
  redis.call('ZADD', z, now + tonumber(ttl), tok)
  local top = tonumber(redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')[2])
  redis.call('PEXPIREAT', z, top)
  redis.call('HSET', KEYS[4], 'f:' .. tok, f, 'host', host, 'pid', pid,
    'since', now)
  if lim then redis.call('HSET', KEYS[4], 'limit', lim) end
  redis.call('PEXPIREAT', KEYS[4], top)
  redis.call('SET', KEYS[1], mark, 'PX',
    string.format('%d', math.max(1, top - now)))
end
local function holders(now, want)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now)
  local n = redis.call('ZCARD', KEYS[3])
  if n > 0 then return n, 1, false end
  n = redis.call('ZCARD', KEYS[7])
  if n > 0 then
    return n, tonumber(redis.call('HGET', KEYS[4], 'limit') or want),
      false
  end
  local cur = redis.call('GET', KEYS[1])
  if cur and cur ~= '\255shared' and cur ~= '\255sem' then
    return 1, 1, not (#cur == 39 and string.match(cur, '^dlock1:%x+$'))
  end
  return 0, 0, false
end
local function room(now, lim)
  local n, l = holders(now, lim)
  return n == 0 or (lim > 1 and l == lim and n < lim)
end
local function told(gave, mine, short, now, seen)
  if short and not (seen and now + short >= seen) then
    redis.pcall('PUBLISH', KEYS[1] .. '\255release',
      'h' .. string.format('%d', short))
  end
  return gave, mine
end
local function handoff(now, me, seen)
  local gave, mine, short = false, nil, nil
  while true do
    local w = redis.call('ZRANGE', KEYS[5], 0, 0)[1]
    if not w then
      redis.call('DEL', KEYS[5], KEYS[6])
      return told(gave, mine, short, now, seen)
    end
    local v = redis.call('HGET', KEYS[6], w)
    local lim = tonumber(redis.call('HGET', KEYS[6], 'l:' .. w) or '1')
    local hid = redis.call('HGET', KEYS[6], 'c:' .. w)
    local ttl, dl, pid, host =
      string.match(v or '', '^(%d+) (%d+) (%d+) (.*)$')
    local live = ttl and tonumber(dl) > now
    if live and not room(now, lim) then
      return told(gave, mine, short, now, seen)
    end
    redis.call('ZREM', KEYS[5], w)
    redis.call('HDEL', KEYS[6], w, 'l:' .. w, 'c:' .. w)
    if live then
      local f = fence(now, t)
      local ok = w == me
      if not ok then
        local n
        if hid then
          n = redis.pcall('PUBLISH', KEYS[1] .. '\255w' .. hid, 'g' .. w)
        else
          n = redis.pcall('PUBLISH', KEYS[1] .. '\255w' .. w,
            'g' .. string.format('%d', f))
        end
        ok = (type(n) ~= 'number' or n > 0)
      end
      if ok then
        gave = true
        if w == me then
          mine = f
        elseif not short or tonumber(ttl) < short then
          short = tonumber(ttl)
        end
        if lim > 1 then
          join(KEYS[7], '\255sem', w, ttl, host, pid, f, now, lim)
        else
          hold(w, ttl, host, pid, f, now)
          if seen then
            redis.call('HSET', KEYS[4], 'seen', string.format('%d', seen))
          end
        end
      end
    end
  end
end
local function pass_on(now, slots, seen)
  local gave = handoff(now, '', seen)
  if not gave or (slots and redis.call('EXISTS', KEYS[5]) == 0) then
    redis.pcall('PUBLISH', KEYS[1] .. '\255release', 'r')
  end
end
local n, lim = holders(now, 1)
if n > 0 and lim ~= 1 then return {-1, lim, n} end
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= '\255shared' and cur ~= '\255sem' then
  return {0, redis.call('PTTL', KEYS[1]),
  (#cur == 39 and string.match(cur, '^dlock1:%x+$')) and 1 or 0} end
local mine = redis.call('HGET', KEYS[4], 'f:' .. ARGV[1])
if mine and redis.call('ZSCORE', KEYS[3], ARGV[1]) then
  return {1, tonumber(mine)}
end
if ARGV[5] ~= 'u' and redis.call('EXISTS', KEYS[5]) == 1 then
  local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  if top[2] then return {0, tonumber(top[2]) - now, 1} end
  if handoff(now, '') then
    return {0, redis.call('PTTL', KEYS[1]), 1}
  end
end
local f = fence(now, t)
join(KEYS[3], '\255shared', ARGV[1], ARGV[2], ARGV[3], ARGV[4], f, now)
return {1, f}
