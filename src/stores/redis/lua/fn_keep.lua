-- fn_keep.lua - keep_of(v): how many runs a name keeps (dlock_keep_runs()),
-- from v, its summary's keep field as HMGET answers it.  The number when it
-- is one dlock writes (decimal 1..{{runs_kept_max}}, no sign, no leading
-- zero); else {{runs_kept}}, the default: a field missing, or planted as 0,
-- negative, huge, a fraction, "inf" or no number at all, never sizes
-- anything (tonumber alone would take "1e9", "0x10" and "nan").
local function keep_of(v)
  if type(v) ~= 'string' or not string.match(v, '^[1-9]%d?%d?%d?%d?$') then
    return {{runs_kept}}
  end
  local n = tonumber(v)
  if n > {{runs_kept_max}} then return {{runs_kept}} end
  return n
end
