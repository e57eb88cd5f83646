-- tournament_registration.lua: the runner opens or closes registration while the tournament
-- is open.
--
-- KEYS[1]  tournament, hash        P{tn:<id>}:tournament
-- ARGV[1]  mode: "open" | "closed"
-- ARGV[2]  cap (players)
-- ARGV[3]  deadline (Unix seconds) or "" for none
--
-- Returns 1 set, -1 no such tournament, -2 the tournament is not open any more.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('HGET', KEYS[1], 'status') ~= 'open' then
  return -2
end
redis.call('HSET', KEYS[1], 'registration', ARGV[1], 'cap', ARGV[2], 'deadline', ARGV[3])
return 1
