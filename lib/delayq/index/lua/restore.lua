-- Put pending jobs back into the due set when they are missing from it (index rebuild).
-- KEYS[1]  the due set       (ZSET: member = job id, score = due_at - priority * BAND, see claim.lua)
-- KEYS[2]  the in-flight set (ZSET: member = job id, score = lease expiry, epoch seconds)
-- ARGV[1]  now, epoch seconds
-- ARGV[2]  a JSON array of [score, "id"] pairs (pending rows read from the database; at most 2000 pairs):
--          one string to send instead of two arguments a job
-- An id already due is left alone (its score may be newer than the row we read).
-- An id in flight with an unexpired lease is left alone: a runner claimed it and
-- is about to move the row to running. An id in flight past its lease was
-- stranded (a runner died between its claim and its UPDATE): it is due again.
-- Needs Redis >= 6.2 (ZMSCORE). Returns how many ids were added.
local now = tonumber(ARGV[1])
local rows = cjson.decode(ARGV[2])
local ids = {}
for k, row in ipairs(rows) do
  ids[k] = row[2]
end
if #ids == 0 then
  return 0
end
local due = redis.call('ZMSCORE', KEYS[1], unpack(ids))
local lease = redis.call('ZMSCORE', KEYS[2], unpack(ids))
local add, free = {}, {}
for k = 1, #ids do
  if not due[k] and (not lease[k] or tonumber(lease[k]) < now) then
    add[#add + 1] = rows[k][1]
    add[#add + 1] = ids[k]
    if lease[k] then
      free[#free + 1] = ids[k]
    end
  end
end
if #add > 0 then
  redis.call('ZADD', KEYS[1], unpack(add))
end
if #free > 0 then
  redis.call('ZREM', KEYS[2], unpack(free))
end
return #add / 2
