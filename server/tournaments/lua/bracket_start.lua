-- bracket_start.lua: close registration and store the first bracket state, once.
--
-- KEYS[1]  tournament, hash                        P{tn:<id>}:tournament
-- KEYS[2]  bracket state, string (JSON)            P{tn:<id>}:bracket
-- ARGV[1]  the bracket state (JSON)
--
-- Returns 1 started, -1 no such tournament, -2 not open (already started or finished).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('HGET', KEYS[1], 'status') ~= 'open' or redis.call('EXISTS', KEYS[2]) == 1 then
  return -2
end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[1], 'status', 'running', 'bracket', '1')
return 1
