if redis.call('GET', KEYS[1]) == ('dlock1:' .. ARGV[1]) then
  return redis.call('PTTL', KEYS[1])
end
return -3
