-- Releases a lock only if the caller still owns it (it may have expired and been taken since).
-- KEYS[1] the lock   ARGV[1] owner
-- Returns 1 when released.

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
