-- run_end.lua - record the end of a run (runs.c, S_RUN_END).  KEYS as
-- run_begin.lua's.  ARGV: 1 fence, 2 result, 3 status.  The run is found
-- by its fence, whoever holds the lock now; a success is also the
-- summary's ok.  Answers 1, or 0 when the run was dropped.
-- @include now.lua
local all = redis.call('LRANGE', KEYS[4], 0, -1)
for i, v in ipairs(all) do
  local f, s, rest =
    string.match(v, '^(%d+) (%d+) %d+ %d+ %-?%d+ (.*)$')
  if f == ARGV[1] then
    v = f .. ' ' .. s .. ' ' .. string.format('%d', now) .. ' ' ..
      ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. rest
    redis.call('LSET', KEYS[4], i - 1, v)
    if ARGV[2] == '1' and ARGV[3] == '0' then
      redis.call('HSET', KEYS[5], 'ok', v)
    end
    return 1
  end
end
return 0
