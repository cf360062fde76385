-- suspension.lua - read a name's suspension (suspend.c, S_SUSPENSION):
-- a script, not HMGET, so that a key of another type someone planted
-- reads as a suspension instead of a WRONGTYPE error.  Writes nothing: a
-- login without write commands may run it.
--
-- KEYS: 1 the name's suspension record.  Answers {0}: not suspended;
-- {1, by, since, reason} (fn_susp.lua says what the three can be).
-- @include fn_susp.lua
local cur = susp(KEYS[1])
if not cur then return {0} end
return {1, cur[1], cur[2], cur[3]}
