-- tournament_unregister.lua: remove a registered player while the tournament is open.
--
-- KEYS[1]  tournament, hash                 P{tn:<id>}:tournament
-- KEYS[2]  registered players, zset         P{tn:<id>}:players
-- ARGV[1]  player id
--
-- Returns 1 removed, 0 not registered, -1 no such tournament, -2 registration is closed.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('HGET', KEYS[1], 'status') ~= 'open' then
  return -2
end
return redis.call('ZREM', KEYS[2], ARGV[1])
