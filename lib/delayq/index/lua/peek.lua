-- The due candidates of one queue, highest priority first, without claiming them (read only).
-- KEYS[1]  the due set (ZSET: member = job id, score = due_at - priority * BAND)
-- ARGV[1]  now, epoch seconds
-- ARGV[2]  the most candidates to return (<= 1000)
-- ARGV[3]  BAND (see claim.lua)
-- Returns id1, score1, id2, score2, ... A runner of several queues peeks at each, picks the
-- ids to take across queues (priority, then the queues in turn), then claims exactly those
-- with claim_ids.lua.
local now, limit, band = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local found = {}
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
while #first > 0 and #found < 2 * limit do
  local base = math.floor(tonumber(first[2]) / band) * band
  local rows = redis.call('ZRANGEBYSCORE', KEYS[1], base, base + now, 'WITHSCORES', 'LIMIT', 0, limit - #found / 2)
  for _, value in ipairs(rows) do
    found[#found + 1] = value
  end
  first = redis.call('ZRANGEBYSCORE', KEYS[1], base + band, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
end
return found
