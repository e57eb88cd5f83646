-- tournament_register.lua: register a player while the tournament is open.
--
-- KEYS[1]  tournament, hash (fields status, bracket, seq ...)   P{tn:<id>}:tournament
-- KEYS[2]  registered players, zset: player -> registration number   P{tn:<id>}:players
-- ARGV[1]  player id
-- ARGV[2]  most players the tournament may hold
--
-- Returns 1 registered, 0 already registered (nothing changed), -1 no such tournament,
-- -2 registration is closed (bracket started or podium awarded), -3 the field is full.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'open' then
  return -2
end
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return 0
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then
  return -3
end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('ZADD', KEYS[2], seq, ARGV[1])
return 1
