-- Claim a batch of due job ids of one queue, highest priority first, atomically.
-- KEYS[1]  the due set       (ZSET: member = job id, score = due_at - priority * BAND, see below)
-- KEYS[2]  the in-flight set (ZSET: member = job id, score = lease expiry, epoch seconds)
-- KEYS[3]  this claim's record (STRING: the ids it took, JSON), "{PREFIX:QUEUE}:claim:TOKEN"
-- ARGV[1]  now, epoch seconds (from the caller's clock: one clock for every runner)
-- ARGV[2]  the most ids to claim (<= 1000)
-- ARGV[3]  lease expiry for the claimed ids, epoch seconds
-- ARGV[4]  BAND (2^35 seconds, more than any due time): each priority level owns the score range
--          [-priority * BAND, -priority * BAND + BAND), so the lowest scores are the highest priority
-- ARGV[5]  seconds the record lives (longer than the caller keeps retrying a call)
-- Returns the claimed ids: highest priority first, earliest due first within a priority.
-- Read, remove and record happen in one script, so two runners never receive the same id.
-- A repeated call with the same token (its first reply was lost in a failover) returns what the
-- first call took instead of claiming more: nothing is stranded in flight by a retry.
-- Each priority level present costs two O(log N) range reads.
local done = redis.call('GET', KEYS[3])
if done then
  return cjson.decode(done)
end
local now, limit, band = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
local claimed = {}
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
while #first > 0 and #claimed < limit do
  local base = math.floor(tonumber(first[2]) / band) * band    -- the start of this priority's range
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], base, base + now, 'LIMIT', 0, limit - #claimed)
  for _, id in ipairs(ids) do
    claimed[#claimed + 1] = id
  end
  first = redis.call('ZRANGEBYSCORE', KEYS[1], base + band, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
end
if #claimed == 0 then
  return claimed
end
redis.call('ZREM', KEYS[1], unpack(claimed))
local pairs_ = {}
for i, id in ipairs(claimed) do
  pairs_[2 * i - 1] = ARGV[3]
  pairs_[2 * i] = id
end
redis.call('ZADD', KEYS[2], unpack(pairs_))
redis.call('SET', KEYS[3], cjson.encode(claimed), 'EX', ARGV[5])
return claimed
