-- Moves the first questions of a provider's queue into a new batch, for the lease holder only.
-- KEYS: 1 lease, 2 pending list, 3 batch counter, 4 batches (hash n -> record)
-- ARGV: 1 holder, 2 count, 3 record JSON, 4 key stem of a batch's custom_id list (n appended)
-- Returns the batch's number, or false when the lease is someone else's.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return false
end
local n = redis.call('INCR', KEYS[3])
local cids = redis.call('LRANGE', KEYS[2], 0, tonumber(ARGV[2]) - 1)
local list = ARGV[4] .. n
for i = 1, #cids, 1000 do
  redis.call('RPUSH', list, unpack(cids, i, math.min(i + 999, #cids)))
end
redis.call('LTRIM', KEYS[2], #cids, -1)
redis.call('HSET', KEYS[4], n, ARGV[3])
return n
