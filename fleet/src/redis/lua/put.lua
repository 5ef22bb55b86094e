-- Stores results of one run, each counted and announced at most once per index (docs/DESIGN.md §4): a
-- redelivered message finds its index already stored and changes nothing. Several results go in
-- one call (the group commit of store.rs); each is handled exactly as if it came alone.
--
-- KEYS[1] run:{id}:results   hash index -> record JSON
-- KEYS[2] run:{id}:counts    hash outcome -> count
-- KEYS[3] events             stream the aggregator tails
-- KEYS[4] run:{id}           the run's registry hash (only read: its TTL)
-- ARGV[1] run id   ARGV[2] events MAXLEN (approximate)   ARGV[3] retention in ms (0 = forever)
-- ARGV[4..] triples: index, record JSON, outcome (ok|failed|skipped)
-- Returns one number per result: 1 when stored, 0 when the index was already stored.

local stored = {}
local any = false
for i = 4, #ARGV, 3 do
  local index, record, outcome = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if redis.call('HSETNX', KEYS[1], index, record) == 0 then
    stored[#stored + 1] = 0
  else
    redis.call('HINCRBY', KEYS[2], outcome, 1)
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*',
      'run', ARGV[1], 'index', index, 'record', record)
    stored[#stored + 1] = 1
    any = true
  end
end

-- A result landing in a run that already expires (a late redelivery after finish) or whose
-- registry is gone (expired) must not leave keys behind forever: it takes the run's TTL, or
-- the retention when the run is unknown.
if any then
  local ttl = redis.call('PTTL', KEYS[4])
  if ttl == -2 then
    ttl = tonumber(ARGV[3])
  end
  if ttl > 0 and redis.call('PTTL', KEYS[1]) == -1 then
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[2], ttl)
  end
end
return stored
