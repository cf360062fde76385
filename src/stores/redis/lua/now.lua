-- now: the server's clock in ms (TIME: seconds, microseconds); t stays
-- for fence(), which wants the microseconds too.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
