-- tournament_cancel.lua: the runner cancels a tournament, once.
--   open     the tournament is removed (record, players, tables list); a tombstone with the
--            owner's name answers a repeated cancel the same way for ARGV[2] ms;
--   running  the status becomes "cancelled": the bracket driver stops it and closes its
--            tables (the bracket state stays, readable, with no podium).
--
-- KEYS[1]  tournament, hash                      P{tn:<id>}:tournament
-- KEYS[2]  registered players, zset              P{tn:<id>}:players
-- KEYS[3]  tables opened, list                   P{tn:<id>}:tables
-- KEYS[4]  tombstone of a removed one, string    P{tn:<id>}:removed
-- ARGV[1]  the owner's (runner's) name
-- ARGV[2]  how long the tombstone lasts, milliseconds
--
-- Returns {code, table ids...}: code 1 removed (the tables the caller closes), 2 stopped
-- (the running bracket's tables so far), 0 cancelled already, 3 removed already; or {-1}
-- no such tournament, {-2} finished (nothing to cancel).
if redis.call('EXISTS', KEYS[1]) == 0 then
  if redis.call('GET', KEYS[4]) == ARGV[1] then
    return {3}
  end
  return {-1}
end
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'cancelled' then
  return {0}
end
if status ~= 'open' and status ~= 'running' then
  return {-2}
end
local tables = redis.call('LRANGE', KEYS[3], 0, -1)
local code = 2
if status == 'open' then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  redis.call('SET', KEYS[4], ARGV[1], 'PX', ARGV[2])
  code = 1
else
  redis.call('HSET', KEYS[1], 'status', 'cancelled')
end
table.insert(tables, 1, code)
return tables
