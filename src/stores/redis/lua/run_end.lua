-- run_end.lua - record the end of a run (runs.c, S_RUN_END).  KEYS as
-- run_begin.lua's.  ARGV: 1 fence, 2 result, 3 status.  The run is found
-- by its fence, whoever holds the lock now; a success is also the
-- summary's ok.  Answers 1, or 0 when the run was dropped.
--
-- Looked for from the head, the newest, in pages: a run that ends before
-- the next begins is the head, found by the first LINDEX-sized read; one
-- that ends later (its lock lost, a semaphore's other slot) costs how far
-- down it is, never the whole list of up to {{runs_kept_max}}.
-- @include now.lua
local i, n = 0, 1
while true do
  local part = redis.call('LRANGE', KEYS[4], i, i + n - 1)
  for j, v in ipairs(part) do
    local f, s, rest =
      string.match(v, '^(%d+) (%d+) %d+ %d+ %-?%d+ (.*)$')
    if f == ARGV[1] then
      v = f .. ' ' .. s .. ' ' .. string.format('%d', now) .. ' ' ..
        ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. rest
      redis.call('LSET', KEYS[4], i + j - 1, v)
      if ARGV[2] == '1' and ARGV[3] == '0' then
        redis.call('HSET', KEYS[5], 'ok', v)
      end
      return 1
    end
  end
  if #part < n then return 0 end
  i, n = i + n, 100
end
