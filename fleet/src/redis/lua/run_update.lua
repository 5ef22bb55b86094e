-- Updates one field of a registered run, refusing to create a partial registry hash for a run
-- that was never registered (or has expired).
--
-- KEYS[1] run:{id}
-- ARGV[1] 'set' or 'incr'   ARGV[2] field   ARGV[3] value (or increment)
-- Returns 1 when updated, 0 when the run is unknown.

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if ARGV[1] == 'incr' then
  redis.call('HINCRBY', KEYS[1], ARGV[2], ARGV[3])
else
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
end
return 1
