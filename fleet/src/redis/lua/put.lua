-- Stores results of one run, each counted and announced at most once per index (docs/DESIGN.md §4): a
-- redelivered message finds its index already stored and changes nothing. Several results go in
-- one call (the group commit of store.rs); each is handled exactly as if it came alone.
--
-- The guard is a bitmap of stored indexes (one bit per example), not the records: a record
-- travels in its event only, until an aggregator has folded it and written it durably (then
-- the event is deleted), so Redis holds what is in flight, not the run (issue 20).
--
-- KEYS[1] run:{id}:stored       bitmap index -> stored
-- KEYS[2] run:{id}:counts       hash outcome -> count, and in_flight (not yet in a result log)
-- KEYS[3] events                stream the aggregators tail (never trimmed: an event is its
--                               result until an aggregator acknowledges it)
-- KEYS[4] run:{id}              the run's registry hash (only read: its TTL)
-- KEYS[5] run:{id}:failed_bits  bitmap index -> its stored result is `failed` (for `retry`)
-- ARGV[1] run id   ARGV[2] retention in ms (0 = forever)
-- ARGV[3..] triples: index, record JSON, outcome (ok|failed|skipped)
-- Returns one number per result: 1 when stored, 0 when the index was already stored.

local stored = {}
local any = false
for i = 3, #ARGV, 3 do
  local index, record, outcome = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if redis.call('SETBIT', KEYS[1], index, 1) == 1 then
    stored[#stored + 1] = 0
  else
    if outcome == 'failed' then
      redis.call('SETBIT', KEYS[5], index, 1)
    end
    redis.call('HINCRBY', KEYS[2], outcome, 1)
    -- In flight until an aggregator acknowledges its event (ack.lua).
    redis.call('HINCRBY', KEYS[2], 'in_flight', 1)
    redis.call('XADD', KEYS[3], '*', 'run', ARGV[1], 'index', index, 'record', record)
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
    ttl = tonumber(ARGV[2])
  end
  if ttl > 0 and redis.call('PTTL', KEYS[1]) == -1 then
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[2], ttl)
    if redis.call('EXISTS', KEYS[5]) == 1 then
      redis.call('PEXPIRE', KEYS[5], ttl)
    end
  end
end
return stored
