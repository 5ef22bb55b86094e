-- Removes parkings that were re-enqueued, each only if it is still the one that was read (the
-- example may have been evaluated and parked again in between).
-- KEYS: 1 parked; ARGV: index, parking, index, parking … Returns how many were removed.
local removed = 0
for i = 1, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    redis.call('HDEL', KEYS[1], ARGV[i])
    removed = removed + 1
  end
end
return removed
