-- `evalfleet retry`: takes back the kept messages of failed examples and removes their failed
-- results (and their counts) in one step, so the re-published messages are stored afresh and
-- nothing is counted twice.
--
-- KEYS[1] run:{id}:results   KEYS[2] run:{id}:counts   KEYS[3] run:{id}:failed
-- Returns the kept messages to re-publish: those whose result is failed (now removed) or was
-- never stored. A message whose index holds a result that is not failed is dropped.

local kept = redis.call('HGETALL', KEYS[3])
local out = {}
for i = 1, #kept, 2 do
  local index, message = kept[i], kept[i + 1]
  local rec = redis.call('HGET', KEYS[1], index)
  if not rec then
    out[#out + 1] = message
  else
    local ok, decoded = pcall(cjson.decode, rec)
    if ok and type(decoded) == 'table' and decoded['outcome'] == 'failed' then
      redis.call('HDEL', KEYS[1], index)
      redis.call('HINCRBY', KEYS[2], 'failed', -1)
      out[#out + 1] = message
    end
  end
end
redis.call('DEL', KEYS[3])
return out
