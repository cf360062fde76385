-- The hand-off: handoff() and pass_on(), with what they use (hold, join,
-- holders).  fence() must come before this file (acquire.lua defines it
-- before its fast path).
--
-- The name is free, or a slot of it is: hand it to the longest waiting
-- live waiters, the caller `me` included, while they fit (a lock waiter
-- needs the name free, a semaphore waiter of limit L one of L slots; the
-- first that does not fit stops the hand-off: first come, first served).
-- An entry past its deadline is dropped unasked; the others are told on
-- their own channel (their handle's for this name, "g" + their token; an
-- older dlock's: its token's, "g" + the fence), and PUBLISH counts who
-- listens: none means the
-- waiter died or gave up (its process closed the connection, or it
-- unsubscribed), and it is dropped too.  Each loop drops one entry or
-- stops, so it ends.  Returns whether anyone got it, and the fence of
-- `me` if it did.
--
-- The other waiters sleep until the lease end of the holder they last
-- saw, and an expiring lease publishes nothing: a waiter handed the lock
-- that dies or hangs at once (a short lease after a long one) would keep
-- them asleep until the old holder's lease end, not its own.  So a
-- hand-off to others than `me` also publishes "h" + the shortest lease
-- it handed on the name's channel: every waiter there moves its next
-- look to that lease end at the latest (sub.c), at no cost of attempts.
-- Only a contended release pays this PUBLISH, and only when it may
-- matter: `seen` (the old holder's, fn_busy.lua), when the caller knows
-- it, bounds the lease end every waiter sleeps until; a hand-off whose
-- shortest lease ends at or after it publishes no hint, since each
-- waiter looks again before that lease can run out (issue 48: the hint
-- woke every waiting handle on each hand-off).  The new holder keeps
-- `seen`.
--
-- {{heard}}: whether the waiter told heard it, from PUBLISH's count n
-- (scripts.c fills it in per variant: on Redis Cluster PUBLISH counts
-- the subscribers of one node only, so there every live entry is
-- handed the lock).
-- @include fn_hold.lua
-- @include fn_join.lua
-- @include fn_holders.lua
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
        ok = {{heard}}
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
-- The lock (or a slot: slots) is gone from its holder: the next waiters
-- have it; else, or when slots may be left over with nobody queued, the
-- name's channel hears of it (waiters not in the queue).
local function pass_on(now, slots, seen)
  local gave = handoff(now, '', seen)
  if not gave or (slots and redis.call('EXISTS', KEYS[5]) == 0) then
    redis.pcall('PUBLISH', KEYS[1] .. '\255release', 'r')
  end
end
