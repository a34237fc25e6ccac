-- Claim a batch of due job ids, atomically.
-- KEYS[1]  the due set       (ZSET: member = job id, score = due time, epoch seconds)
-- KEYS[2]  the in-flight set (ZSET: member = job id, score = lease expiry, epoch seconds)
-- ARGV[1]  now, epoch seconds (from the caller's clock: one clock for every runner)
-- ARGV[2]  the most ids to claim (<= 1000)
-- ARGV[3]  lease expiry for the claimed ids, epoch seconds
-- Returns the claimed ids, earliest due first. Read, remove and record happen
-- in one script, so two runners never receive the same id.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #ids == 0 then
  return ids
end
redis.call('ZREM', KEYS[1], unpack(ids))
local pairs_ = {}
for i, id in ipairs(ids) do
  pairs_[2 * i - 1] = ARGV[3]
  pairs_[2 * i] = id
end
redis.call('ZADD', KEYS[2], unpack(pairs_))
return ids
