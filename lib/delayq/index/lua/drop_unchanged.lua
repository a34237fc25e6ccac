-- Remove members from one set, each only if its score is still the one the caller read.
-- KEYS[1]  a due or in-flight set (ZSET: member = job id, score = epoch seconds)
-- ARGV     score1, id1, score2, id2, ... as read by ZSCAN
-- Used by the index rebuild for members whose row is no longer pending (due set) or
-- running (in-flight set): a member re-added meanwhile with a new score is kept.
-- Returns how many members were removed.
local removed = 0
for i = 1, #ARGV, 2 do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i + 1])
  if score and tonumber(score) == tonumber(ARGV[i]) then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i + 1])
  end
end
return removed
