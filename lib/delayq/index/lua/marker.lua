-- The rebuild marker (RedisRebuild.rebuild_due): 1 when this run rebuilds the index now, 0 when a rebuild ran
-- recently enough under the same masters.
-- KEYS[1]  the marker, "{prefix}:rebuilt": "<token> <masters>"
-- ARGV[1]  this run's token (a repeated call whose first reply was lost still finds its own marker: 1)
-- ARGV[2]  the run_id of every master holding the index, sorted, comma-separated
-- ARGV[3]  seconds the marker lives (--rebuild-every)
-- No marker: a new, restarted or wiped server, or the marker expired. A marker written under other masters: a
-- failover since the last rebuild, and a promoted replica may lack writes its old master acknowledged.
local mine = ARGV[1] .. ' ' .. ARGV[2]
local old = redis.call('GET', KEYS[1])
if old == mine then
  return 1
end
if old then
  local gap = string.find(old, ' ', 1, true)
  if gap and string.sub(old, gap + 1) == ARGV[2] then
    return 0
  end
end
redis.call('SET', KEYS[1], mine, 'EX', ARGV[3])
return 1
