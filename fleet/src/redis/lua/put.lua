-- Stores one result, counts it and emits its event, atomically and at most once per index
-- (DESIGN §4): a redelivered message finds its index already stored and changes nothing.
--
-- KEYS[1] run:{id}:results   hash index -> record JSON
-- KEYS[2] run:{id}:counts    hash outcome -> count
-- KEYS[3] events             stream the aggregator tails
-- KEYS[4] run:{id}           the run's registry hash (only read: its TTL)
-- ARGV[1] index   ARGV[2] record JSON   ARGV[3] outcome (ok|failed|skipped)
-- ARGV[4] run id  ARGV[5] events MAXLEN (approximate)   ARGV[6] retention in ms (0 = forever)
-- Returns 1 when stored, 0 when the index was already stored.

if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*',
  'run', ARGV[4], 'index', ARGV[1], 'record', ARGV[2])

-- A result landing in a run that already expires (a late redelivery after finish) or whose
-- registry is gone (expired) must not leave keys behind forever: it takes the run's TTL, or
-- the retention when the run is unknown.
local ttl = redis.call('PTTL', KEYS[4])
if ttl == -2 then
  ttl = tonumber(ARGV[6])
end
if ttl > 0 and redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 1
