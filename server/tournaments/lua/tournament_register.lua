-- tournament_register.lua: register a player while the tournament is open.
--
-- KEYS[1]  tournament, hash (fields status, bracket, seq, registration, cap, deadline ...)
--          P{tn:<id>}:tournament
-- KEYS[2]  registered players, zset: player -> registration number   P{tn:<id>}:players
-- ARGV[1]  player id
-- ARGV[2]  most players the tournament may hold (the runner's limit)
-- ARGV[3]  "1" when the player joins by themselves (open registration), else "0"
-- ARGV[4]  now, Unix seconds (checked against the registration deadline on a self-join)
--
-- Returns 1 registered, 0 already registered (nothing changed), -1 no such tournament,
-- -2 registration is closed (bracket started or podium awarded), -3 the field is full,
-- -4 the tournament is not open to players (its runner registers them), -5 the
-- registration deadline has passed.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'open' then
  return -2
end
local limit = tonumber(ARGV[2])
if ARGV[3] == '1' then
  local fields = redis.call('HMGET', KEYS[1], 'registration', 'cap', 'deadline')
  if fields[1] ~= 'open' then
    return -4
  end
  if fields[3] and fields[3] ~= '' and tonumber(ARGV[4]) >= tonumber(fields[3]) then
    return -5
  end
  if fields[2] and tonumber(fields[2]) < limit then
    limit = tonumber(fields[2])
  end
end
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return 0
end
if redis.call('ZCARD', KEYS[2]) >= limit then
  return -3
end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('ZADD', KEYS[2], seq, ARGV[1])
return 1
