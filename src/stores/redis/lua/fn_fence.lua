-- The next fence, at TIME t (now: t in ms): the counter, but never less
-- than the server's clock in us (to the microsecond: two masters of a
-- split brain both on the floor in one millisecond would otherwise hand
-- out the same fence).  A server that lost the counter (a restart
-- without persistence) or has an old value of it (a replica promoted
-- before it saw the last INCRs, an AOF that lost its last second) still
-- hands out more than before, as long as it was away longer than the
-- servers' clocks differ.
local function fence(now, t)
  local f = redis.call('INCR', KEYS[2])
  local us = now * 1000 + tonumber(t[2]) % 1000
  if f < us then
    f = us
    redis.call('SET', KEYS[2], string.format('%d', f))
  end
  return f
end
