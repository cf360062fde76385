-- suspend.lua - suspend a job's name everywhere (suspend.c, S_SUSPEND).
--
-- KEYS: 1 the name's suspension record (P NAME \xff suspended, in the
-- slot of its run keys).  ARGV: 1 by (who), 2 reason ('' for none).
-- Answers {0}: suspended now, the record {by, since (the server's
-- clock, ms), reason} written; {1, by, since, reason}: suspended
-- already, the record left as it was (fn_susp.lua says what the three
-- can be).  The clock is read only once a record is to be written: a
-- login that may only read is told of a suspension already there, and
-- refused (by the server's ACL) only where it would write.  The record
-- never expires.
-- @include fn_susp.lua
local cur = susp(KEYS[1])
if cur then return {1, cur[1], cur[2], cur[3]} end
-- @include now.lua
redis.call('HSET', KEYS[1], 'by', ARGV[1], 'since',
  string.format('%d', now), 'reason', ARGV[2])
return {0}
