-- fn_susp.lua - susp(k): the name's suspension record in key k (suspend.c),
-- as the scripts that read it answer it: nil when there is none; else
-- {by, since, reason}, each the hash field's text (false when the hash
-- lacks it), or 0 for all three when k holds something that is no hash
-- (planted by another client: it suspends all the same, and its texts
-- read back as "?").
local function susp(k)
  local ty = redis.call('TYPE', k)['ok']
  if ty == 'none' then return nil end
  if ty ~= 'hash' then return {0, 0, 0} end
  return redis.call('HMGET', k, 'by', 'since', 'reason')
end
