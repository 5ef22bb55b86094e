-- `evalfleet retry`: takes back the kept messages of failed examples and clears their stored
-- bits (and their counts) in one step, so the re-published messages are stored afresh and
-- nothing is counted twice.
--
-- KEYS[1] run:{id}:stored   KEYS[2] run:{id}:counts   KEYS[3] run:{id}:failed
-- KEYS[4] run:{id}:failed_bits
-- Returns the kept messages to re-publish: those whose result is failed (now cleared) or was
-- never stored. A message whose index holds a result that is not failed is dropped.

local kept = redis.call('HGETALL', KEYS[3])
local out = {}
for i = 1, #kept, 2 do
  local index, message = kept[i], kept[i + 1]
  if redis.call('GETBIT', KEYS[1], index) == 0 then
    out[#out + 1] = message
  elseif redis.call('GETBIT', KEYS[4], index) == 1 then
    redis.call('SETBIT', KEYS[1], index, 0)
    redis.call('SETBIT', KEYS[4], index, 0)
    redis.call('HINCRBY', KEYS[2], 'failed', -1)
    out[#out + 1] = message
  end
end
redis.call('DEL', KEYS[3])
return out
