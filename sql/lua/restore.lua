-- Put pending jobs back into the due set when they are missing from it (index rebuild).
-- KEYS[1]  the due set       (ZSET: member = job id, score = due time, epoch seconds)
-- KEYS[2]  the in-flight set (ZSET: member = job id, score = lease expiry, epoch seconds)
-- ARGV[1]  now, epoch seconds
-- ARGV[2..] due1, id1, due2, id2, ... (pending rows read from the database)
-- An id already due is left alone (its score may be newer than the row we read).
-- An id in flight with an unexpired lease is left alone: a runner claimed it and
-- is about to move the row to running. An id in flight past its lease was
-- stranded (a runner died between its claim and its UPDATE): it is due again.
-- Returns how many ids were added.
local now = tonumber(ARGV[1])
local added = 0
for i = 2, #ARGV, 2 do
  local due, id = ARGV[i], ARGV[i + 1]
  if not redis.call('ZSCORE', KEYS[1], id) then
    local lease = redis.call('ZSCORE', KEYS[2], id)
    if not lease or tonumber(lease) < now then
      redis.call('ZADD', KEYS[1], due, id)
      redis.call('ZREM', KEYS[2], id)
      added = added + 1
    end
  end
end
return added
