-- resume.lua - lift a name's suspension (suspend.c, S_RESUME).
--
-- KEYS: 1 the name's suspension record.  Answers {0}: none, nothing
-- done; {1, by, since, reason}: the record as it was, now deleted
-- (fn_susp.lua says what the three can be).
-- @include fn_susp.lua
local cur = susp(KEYS[1])
if not cur then return {0} end
redis.call('DEL', KEYS[1])
return {1, cur[1], cur[2], cur[3]}
