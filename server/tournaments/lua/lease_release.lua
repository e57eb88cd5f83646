-- lease_release.lua: give a bracket's lease back, only if this node holds it.
--
-- KEYS[1]  lease, string: holder node id     P{tn:<id>}:lease
-- ARGV[1]  node id
--
-- Returns 1 released, 0 not held by this node.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
