-- Pauses every worker of a shared quota (a 429 was seen): sets the pause key for ARGV[1] ms,
-- never shortening a longer pause already in force.
-- KEYS[1] ratelimit:<key>:pause   ARGV[1] ms
-- Returns the pause now in force, in ms.

local current = redis.call('PTTL', KEYS[1])
local wanted = tonumber(ARGV[1])
if current < wanted then
  redis.call('SET', KEYS[1], '1', 'PX', wanted)
  return wanted
end
return current
