-- Forgets a run as one with batch work once none of its examples is parked (or always, when
-- forced: a cancelled run). A worker that parks again adds the run back in its own script.
-- KEYS: 1 parked, 2 runs with batch work; ARGV: 1 run id, 2 '1' to force
if ARGV[2] == '1' or redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[1])
  return 1
end
return 0
