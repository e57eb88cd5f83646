-- lease_take.lua: take a bracket's lease, or renew it when this node holds it already.
--
-- KEYS[1]  lease, string: holder node id     P{tn:<id>}:lease
-- ARGV[1]  node id
-- ARGV[2]  lease time, milliseconds
--
-- Returns 1 when this node holds the lease now, 0 when another node does.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
