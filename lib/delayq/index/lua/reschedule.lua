-- Move in-flight job ids back to the due set with new due times, atomically.
-- KEYS[1]  the due set       (ZSET: member = job id, score = due_at - priority * BAND, see claim.lua)
-- KEYS[2]  the in-flight set (ZSET: member = job id, score = lease expiry)
-- ARGV     score1, id1, score2, id2, ... (at most 1000 pairs per call)
-- Called after the retry was committed to the database, never before.
redis.call('ZADD', KEYS[1], unpack(ARGV))
local ids = {}
for i = 2, #ARGV, 2 do
  ids[#ids + 1] = ARGV[i]
end
redis.call('ZREM', KEYS[2], unpack(ids))
return #ids
