-- acquire.lua - take an exclusive lock (S_ACQ).
--
-- Every per-lock script gets the same keys and arguments (scripts.c):
-- KEYS: 1 lock, 2 fence, 3 readers, 4 info, 5 queue, 6 waiters, 7 sem.
-- ARGV: 1 token, 2 ttl ms, 3 host, 4 pid, 5 (an acquire) how it treats
-- the queue: 'q' wait, 'n' try, 'u' unfair (redis.h: Q_*), 6 (a semaphore's
-- acquire) its limit.  Channels are not keys: the name's release channel
-- is KEYS[1] .. '\255release', a waiter's own channel KEYS[1] .. '\255w'
-- .. its token.  PUBLISH goes through pcall: a user whose ACL has no
-- channel rights still releases (waiters then notice by their timers).
--
-- While readers hold a name, its lock key holds '\255shared' (with the
-- longest reader lease), so clients that only know the plain SET NX
-- pattern are kept out by readers too; while a semaphore's holders do,
-- '\255sem'.  An exclusive holder's value is 'dlock1:' .. its owner token
-- (32 hex digits), not the bare token: other clients' tokens are often
-- 32 hex digits too (node-redlock, PHP's bin2hex(random_bytes(16))), but
-- none starts with "dlock1:", and only dlock publishes when it lets go:
-- (#v == 39 and string.match(v, '^dlock1:%x+$')) tells a waiter whether
-- it will hear the release or has to look for it.  A value written by a
-- dlock older than this format counts as foreign, which only costs
-- polling.
--
-- Answers {1, fence} (held), or busy()'s (fn_busy.lua).
-- @include fn_fence.lua
--
-- The uncontended acquire, first in the script, before the functions of
-- the other paths are made: none of the lock, readers, info, queue,
-- waiters and semaphore keys (one EXISTS) is a name nobody holds, waits
-- for or left anything on: what the full path would find (no holders,
-- an empty queue: nothing to clean up or hand off) and do (fence() and
-- hold(), less the DEL of an info hash that does not exist), in 7
-- commands (EXISTS, TIME, INCR, the clock floor's SET, SET, HSET,
-- PEXPIRE).  Anything else, a foreign holder or a stale key included,
-- takes the full path.
if redis.call('EXISTS', KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6],
    KEYS[7]) == 0 then
  -- @include now.lua
  local f = fence(now, t)
  redis.call('SET', KEYS[1], ('dlock1:' .. ARGV[1]), 'PX', ARGV[2])
  redis.call('HSET', KEYS[4], 'fence', f, 'host', ARGV[3],
    'pid', ARGV[4], 'since', now)
  redis.call('PEXPIRE', KEYS[4], ARGV[2])
  return {1, f}
end
-- @include now.lua
-- @include fn_handoff.lua
-- @include fn_enqueue.lua
-- @include fn_busy.lua
-- Ours already (handed to us: the attempt of the waiter its "g" message
-- woke, or a later one if the message was lost): the lease restarts now,
-- so the caller can count it from this call, and the fence is the one
-- the hand-off drew.  The message itself is never taken as the grant
-- (sub.c): anyone may publish it.
local cur = redis.call('GET', KEYS[1])
if cur == ('dlock1:' .. ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[4], ARGV[2])
  return {1, tonumber(redis.call('HGET', KEYS[4], 'fence') or '0')}
end
local function look()
  local n, lim, foreign = holders(now, 1)
  if n > 0 and lim ~= 1 then return {-1, lim, n} end
  cur = redis.call('GET', KEYS[1])
  if cur and cur ~= '\255shared' and cur ~= '\255sem' then
    return busy(now, redis.call('PTTL', KEYS[1]), not foreign)
  end
  if n > 0 then return busy(now, last(KEYS[3], now), true) end
  return nil
end
local r = look()
if r then return r end
-- Free: those who queued come first, unless the caller opted out.
if ARGV[5] ~= 'u' then
  local gave, mine = handoff(now, ARGV[1])
  if mine then return {1, mine} end
  r = gave and look()
  if r then return r end
end
local f = fence(now, t)
hold(ARGV[1], ARGV[2], ARGV[3], ARGV[4], f, now)
return {1, f}
