-- value_set.lua - publish a leader's value under its term (elect.c,
-- S_VALUE_SET).
--
-- KEYS: 1 lock, 2 readers, 3 semaphore holders, 4 the name's leader
-- record (all in one slot).  ARGV: 1 token, 2 what lk is ('x' a lock,
-- 's' a shared lock, 'm' a semaphore slot), 3 the fence (the term),
-- 4 the value, 5 '1' if there is one ('0': a leader without a value,
-- or with an empty one, whose record is dropped).  Ownership is what run_begin.lua checks.  Answers 0: not
-- ours, nothing written; 1: recorded, replacing any earlier record, and
-- the name's release channel told ("v"), so that observers read again
-- at once.  PUBLISH goes through pcall, as the release's does: a user
-- without channel rights still publishes the value (observers then see
-- it at their next re-read).  The record never expires: it is shown
-- only while its fence is the holder's.
-- @include now.lua
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
if not mine then return 0 end
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[4], 'fence', ARGV[3], 'value', ARGV[4])
else
  redis.call('DEL', KEYS[4])
end
redis.pcall('PUBLISH', KEYS[1] .. '\255release', 'v')
return 1
