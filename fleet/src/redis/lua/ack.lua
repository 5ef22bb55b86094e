-- Acknowledges events an aggregator has written durably, and deletes them from the stream.
-- Each result counts as in flight (`in_flight` in its run's counts, raised by put.lua) until
-- its event is acknowledged the first time: an aggregator finishes a run only when none of its
-- results is in flight, i.e. every stored result is in a result log.
--
-- KEYS[1] events   KEYS[2..] run:{id}:counts of each event, in ARGV's order
-- ARGV[1] the consumer group   ARGV[2..] event ids
-- Returns the number of events acknowledged for the first time.

local acked = 0
for i = 2, #ARGV do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
    acked = acked + 1
    if redis.call('HINCRBY', KEYS[i], 'in_flight', -1) < 0 then
      -- An event stored before results were counted in flight.
      redis.call('HSET', KEYS[i], 'in_flight', 0)
    end
  end
  redis.call('XDEL', KEYS[1], ARGV[i])
end
return acked
