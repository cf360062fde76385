-- An acquire's answer when the name is taken: {0, lease left (when to
-- look again; -1 unknown), 1 if a dlock holder (it publishes when it lets
-- go), place in the queue}; held with another limit: {-1, that limit,
-- holders}.  soonest and last: the first and the last lease end in z.
-- Needs enqueue() (fn_enqueue.lua) before it.
--
-- A dlock holder's info hash keeps 'seen': the latest lease end (server
-- ms) any busy answer gave, so the latest time a waiter may sleep until
-- (wait.c: it looks again at the lease end it was told).  A hand-off
-- whose new lease ends no sooner need not hint the waiters
-- (fn_handoff.lua).  Written only into a hash that exists (it lives and
-- dies with the holder's lease).
local function busy(now, left, dlock)
  if dlock and left >= 0 then
    local e = now + left
    local s = redis.call('HGET', KEYS[4], 'seen')
    if (s and tonumber(s) < e) or
        (not s and redis.call('EXISTS', KEYS[4]) == 1) then
      redis.call('HSET', KEYS[4], 'seen', string.format('%d', e))
    end
  end
  return {0, left, dlock and 1 or 0, enqueue(now, left)}
end
local function edge(z, i, now)
  local e = redis.call('ZRANGE', z, i, i, 'WITHSCORES')[2]
  return e and tonumber(e) - now or -1
end
local function soonest(z, now) return edge(z, 0, now) end
local function last(z, now) return edge(z, -1, now) end
