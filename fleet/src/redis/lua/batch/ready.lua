-- Of the given parked examples, those whose every awaited result is in.
-- KEYS: 1 parked, 2 answers; ARGV: indexes. Returns index, parking, index, parking …
local out = {}
for i = 1, #ARGV do
  local parking = redis.call('HGET', KEYS[1], ARGV[i])
  if parking then
    local head = string.sub(parking, 1, string.find(parking, '\n', 1, true) - 1)
    local all = true
    for cid in string.gmatch(head, '%S+') do
      if redis.call('HEXISTS', KEYS[2], cid) == 0 then
        all = false
        break
      end
    end
    if all then
      table.insert(out, ARGV[i])
      table.insert(out, parking)
    end
  end
end
return out
