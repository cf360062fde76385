-- A busy attempt that waits (ARGV[5] 'q') joins the queue (or keeps its
-- place) with a deadline past the holder's lease by a grace of 10000 ms:
-- a waiter looks again at that lease end at the latest, which renews its
-- entry, so only an entry whose waiter is gone (or hangs) runs out.  A
-- semaphore's waiter notes its limit ("l:" token).  ARGV[5] 'q' .. HID
-- (HID: 16 hex digits, the waiter's store handle) notes the handle's own
-- channel for this name ("c:" token), which the handle keeps subscribed
-- from one wait to the next; a bare 'q' (an older dlock) is told on a
-- channel of its token.  Returns the place in the queue (1: next), 0 when
-- not queued.
local function enqueue(now, left)
  if string.sub(ARGV[5], 1, 1) ~= 'q' then return 0 end
  local dl = now + math.max(left, 1000) + 10000
  if not redis.call('ZSCORE', KEYS[5], ARGV[1]) then
    redis.call('ZADD', KEYS[5], redis.call('HINCRBY', KEYS[6], '#', 1),
      ARGV[1])
  end
  redis.call('HSET', KEYS[6], ARGV[1], ARGV[2] .. ' ' ..
    string.format('%d', dl) .. ' ' .. ARGV[4] .. ' ' .. ARGV[3])
  if ARGV[6] then redis.call('HSET', KEYS[6], 'l:' .. ARGV[1], ARGV[6]) end
  local hid = string.match(ARGV[5], '^q(%x+)$')
  if hid and #hid == 16 then
    redis.call('HSET', KEYS[6], 'c:' .. ARGV[1], hid)
  end
  if redis.call('PTTL', KEYS[5]) < dl - now then
    redis.call('PEXPIREAT', KEYS[5], dl)
    redis.call('PEXPIREAT', KEYS[6], dl)
  end
  return redis.call('ZRANK', KEYS[5], ARGV[1]) + 1
end
