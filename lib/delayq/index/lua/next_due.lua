-- The earliest due time of one queue across its priority levels (for a runner deciding how long to sleep).
-- KEYS[1]  the due set (ZSET: member = job id, score = due_at - priority * BAND)
-- ARGV[1]  BAND (see claim.lua)
-- Returns the earliest due_at as a string (epoch seconds), or false when the set is empty.
local band = tonumber(ARGV[1])
local best = nil
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
while #first > 0 do
  local score = tonumber(first[2])
  local base = math.floor(score / band) * band
  if best == nil or score - base < best then
    best = score - base
  end
  first = redis.call('ZRANGEBYSCORE', KEYS[1], base + band, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
end
if best == nil then
  return false
end
return tostring(best)
