-- Claim the given ids of one queue if they are still due, atomically (after peek.lua).
-- KEYS[1]  the due set       (ZSET: member = job id, score = due_at - priority * BAND)
-- KEYS[2]  the in-flight set (ZSET: member = job id, score = lease expiry, epoch seconds)
-- KEYS[3]  this claim's record (STRING: the ids it took, JSON), "{PREFIX:QUEUE}:claim:TOKEN"
-- ARGV[1]  now, epoch seconds
-- ARGV[2]  lease expiry for the claimed ids, epoch seconds
-- ARGV[3]  BAND (see claim.lua)
-- ARGV[4]  seconds the record lives (see claim.lua)
-- ARGV[5..] the ids to claim
-- Returns the ids claimed: those still in the due set and due by now (another runner may
-- have taken some since the peek: they are simply not returned). A repeated call with the
-- same token returns what the first call took.
local done = redis.call('GET', KEYS[3])
if done then
  return cjson.decode(done)
end
local now, band = tonumber(ARGV[1]), tonumber(ARGV[3])
local claimed = {}
for i = 5, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score then
    score = tonumber(score)
    local base = math.floor(score / band) * band
    if score - base <= now then
      claimed[#claimed + 1] = ARGV[i]
    end
  end
end
if #claimed == 0 then
  return claimed
end
redis.call('ZREM', KEYS[1], unpack(claimed))
local pairs_ = {}
for i, id in ipairs(claimed) do
  pairs_[2 * i - 1] = ARGV[2]
  pairs_[2 * i] = id
end
redis.call('ZADD', KEYS[2], unpack(pairs_))
redis.call('SET', KEYS[3], cjson.encode(claimed), 'EX', ARGV[4])
return claimed
