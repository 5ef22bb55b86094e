-- Fleet-wide rate limit: a GCRA (generic cell rate algorithm) on one key, shared by every
-- worker. The key holds the theoretical arrival time (TAT, µs); time is Redis's own TIME, so
-- the workers' clocks never matter. Workers ask for a lease of several units and spend it
-- locally, so a busy fleet makes one round trip per lease, not per request.
--
-- KEYS[1] ratelimit:<key>   KEYS[2] ratelimit:<key>:pause (set by a worker that saw a 429)
-- ARGV[1] emission interval in µs per unit (may be fractional)   ARGV[2] burst (units)
-- ARGV[3] units wanted   ARGV[4] fewest units worth granting (<= wanted, <= burst)
-- Returns {granted, wait µs, pause ms}: granted > 0, or a wait until `fewest` units are
-- available, or the remaining fleet pause.

local pause = redis.call('PTTL', KEYS[2])
if pause > 0 then
  return {0, 0, pause}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local fewest = tonumber(ARGV[4])

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
  tat = now
end
local tau = interval * burst
-- Units whose emission still fits in the tolerance window (epsilon: float division).
local available = math.floor((now + tau - tat) / interval + 1e-9)
if available >= fewest then
  local n = math.min(want, available)
  local new_tat = tat + n * interval
  redis.call('SET', KEYS[1], string.format('%.0f', new_tat),
    'PX', math.ceil((new_tat - now) / 1000) + 1000)
  return {n, 0, 0}
end
return {0, math.ceil(tat + fewest * interval - tau - now), 0}
