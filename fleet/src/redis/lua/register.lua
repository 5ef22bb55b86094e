-- Registers a run once: the registry hash, its spec and its place in the `runs` index.
-- A second registration of the same id (re-submitting to resume) changes nothing.
--
-- KEYS[1] run:{id}   KEYS[2] run:{id}:spec   KEYS[3] runs (sorted set)
-- ARGV[1] run id   ARGV[2] creation time (unix ms, the score)   ARGV[3] spec JSON
-- ARGV[4..] field, value pairs of the registry hash
-- Returns 1 when registered, 0 when the run already existed.

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('SET', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return 1
