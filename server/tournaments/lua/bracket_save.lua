-- bracket_save.lua: store a bracket state, only from the node holding the bracket's lease
-- (a node that lost its lease never overwrites the new holder's state).
--
-- KEYS[1]  lease, string: holder node id (expiring)     P{tn:<id>}:lease
-- KEYS[2]  bracket state, string (JSON)                  P{tn:<id>}:bracket
-- KEYS[3]  tournament, hash                              P{tn:<id>}:tournament
-- ARGV[1]  node id
-- ARGV[2]  the bracket state (JSON)
-- ARGV[3]  the tournament's status now ("running" or "finished")
--
-- Returns 1 stored, 0 the lease is not this node's or the runner cancelled the tournament
-- meanwhile (nothing changed).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if redis.call('HGET', KEYS[3], 'status') == 'cancelled' then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], 'status', ARGV[3])
return 1
