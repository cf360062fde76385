local cur = redis.call('GET', KEYS[1])
if cur == ('dlock1:' .. ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[4], ARGV[2])
  return 1
end
if not cur then
  redis.pcall('PUBLISH', KEYS[1] .. '\255release', 'r')
end
return 0
