-- Records a batch's new state, for the lease holder only. Once the provider has the batch, its
-- questions' lines are no longer needed: they are blanked (the field stays: it marks the
-- question as asked).
-- KEYS: 1 lease, 2 batches, 3 questions, 4 the batch's custom_id list
-- ARGV: 1 holder, 2 n, 3 record JSON, 4 '1' to blank the lines
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
if ARGV[4] == '1' then
  for _, cid in ipairs(redis.call('LRANGE', KEYS[4], 0, -1)) do
    redis.call('HSET', KEYS[3], cid, '')
  end
end
return 1
