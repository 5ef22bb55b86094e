-- Takes or keeps a coordinator's lease.
-- KEYS: 1 lease; ARGV: 1 holder, 2 ttl (ms). Returns 1 while the holder has it.
local current = redis.call('GET', KEYS[1])
if current == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not current then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
