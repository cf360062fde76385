-- An acquire's answer when the name is taken: {0, lease left (when to
-- look again; -1 unknown), 1 if a dlock holder (it publishes when it lets
-- go), place in the queue}; held with another limit: {-1, that limit,
-- holders}.  soonest and last: the first and the last lease end in z.
-- Needs enqueue() (fn_enqueue.lua) before it.
local function busy(now, left, dlock)
  return {0, left, dlock and 1 or 0, enqueue(now, left)}
end
local function edge(z, i, now)
  local e = redis.call('ZRANGE', z, i, i, 'WITHSCORES')[2]
  return e and tonumber(e) - now or -1
end
local function soonest(z, now) return edge(z, 0, now) end
local function last(z, now) return edge(z, -1, now) end
