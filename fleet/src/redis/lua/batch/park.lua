-- Parks one example until every one of its questions has a result (batch_store.rs).
-- KEYS: 1 questions (hash cid -> line), 2 answers (hash cid -> result), 3 parked (hash index ->
--       parking), 4 runs with batch work (set), 5 providers with a pending list (set: the run's
--       retention finds the lists through it)
-- ARGV: 1 run id, 2 index, 3 message JSON, 4 pending-list key stem (the provider is appended),
--       then (provider, custom_id, line) per question
-- Returns 1 when parked, 0 when every result is already in (evaluate the example again).
local awaited = {}
for i = 5, #ARGV, 3 do
  local provider, cid, line = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if redis.call('HEXISTS', KEYS[2], cid) == 0 then
    table.insert(awaited, cid)
    -- The first to ask queues the question; later askers only wait for it.
    if redis.call('HSETNX', KEYS[1], cid, line) == 1 then
      if redis.call('RPUSH', ARGV[4] .. provider, cid) == 1 then
        redis.call('SADD', KEYS[5], provider)
      end
    end
  end
end
if #awaited == 0 then
  return 0
end
redis.call('HSET', KEYS[3], ARGV[2], table.concat(awaited, ' ') .. '\n' .. ARGV[3])
redis.call('SADD', KEYS[4], ARGV[1])
return 1
