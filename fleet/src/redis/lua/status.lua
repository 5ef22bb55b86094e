-- Changes a run's status and, with it, the lifetime of every key of the run: a finished run
-- (complete or cancelled) expires after the retention; a run that is (re)opened — `retry` on a
-- finished run — is kept until it finishes again.
--
-- KEYS[1] run:{id}  KEYS[2] :spec  KEYS[3] :stored (the exactly-once bitmap)  KEYS[4] :counts
-- KEYS[5] :failed  KEYS[6] :summary  KEYS[7] :scenarios (log-analysis ground truth by digest)
-- KEYS[8..13] batch mode's :batch:questions, :answers, :parked, :batches, :next (the last
--   batch's number) and :providers (those with a pending list); the batches' custom_id lists
--   (:batch:cids:<n>) and pending lists (:batch:pending:<provider>) are found from them
-- KEYS[14] :failed_bits (which stored results are failed, for `retry`)
-- ARGV[1] status   ARGV[2] retention in ms (0 = keep forever)   ARGV[3] now (RFC 3339)
-- ARGV[4] '1' when ARGV[5] is the summary to store   ARGV[5] summary.md text
-- ARGV[6..] extra field, value pairs for the registry hash
-- Returns 1 when changed, 0 when the run is unknown.

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local status = ARGV[1]
local finished = status == 'complete' or status == 'cancelled'
local fields = {'status', status}
if finished then
  fields[#fields + 1] = 'finished_at'
  fields[#fields + 1] = ARGV[3]
else
  redis.call('HDEL', KEYS[1], 'finished_at', 'gates_passed')
end
for i = 6, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
redis.call('HSET', KEYS[1], unpack(fields))
if ARGV[4] == '1' then
  redis.call('SET', KEYS[6], ARGV[5])
end
local keys = {unpack(KEYS)}
local stem = string.sub(KEYS[8], 1, -string.len('questions') - 1)
for n = 1, tonumber(redis.call('GET', KEYS[12]) or '0') do
  keys[#keys + 1] = stem .. 'cids:' .. n
end
for _, provider in ipairs(redis.call('SMEMBERS', KEYS[13])) do
  keys[#keys + 1] = stem .. 'pending:' .. provider
end
local retention = tonumber(ARGV[2])
for _, key in ipairs(keys) do
  if finished and retention > 0 then
    redis.call('PEXPIRE', key, retention)
  else
    redis.call('PERSIST', key)
  end
end
return 1
