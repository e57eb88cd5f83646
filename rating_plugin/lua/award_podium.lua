-- award_podium.lua: add fixed Table42 prizes to a tournament's podium, once per tournament id.
--
-- Each placed player gets its prize added to the Table42 rating (games, wins and losses do
-- not change: a podium award is not a game), a new leaderboard score and a history entry
-- (the award record's key), and the award joins the Table42 applied-order log, all in one
-- atomic step. A tournament id that already has a record changes nothing.
--
-- KEYS[1]  podium record, string (below)                   P{rated}:podium:<tournament_id>
-- KEYS[2]  Table42 sequence counter, string (integer)      P{rated}:table42:seq
-- KEYS[3]  Table42 leaderboard, zset: member player, score rating
-- KEYS[4 + 2(i-1)]  rating hash of the player in place i (i = 1 .. ARGV[5])
-- KEYS[5 + 2(i-1)]  history list (record keys, newest first) of the player in place i
-- KEYS[4 + 2n]      Table42 applied-order log, list of record keys, oldest first (the award
--                   takes its place there like a game: entry i is the record of seq i + 1)
--
-- ARGV[1]  tournament id
-- ARGV[2]  award time as given by the caller (Unix seconds, decimal), stored as given
-- ARGV[3]  start rating of a player never seen (1500)
-- ARGV[4]  history bound (entries kept per player, >= 1)
-- ARGV[5]  number of places n (1 .. 3)
-- ARGV[6 + 2(i-1)]  player in place i
-- ARGV[7 + 2(i-1)]  prize of place i (integer rating points)
--
-- Returns {applied, record}: applied is 1 when this call made the award and 0 when the
-- tournament id already had one (nothing changed; the stored record comes back). The record is
-- what KEYS[1] holds: fields joined by "\n", numbers as decimal strings:
--   1 "podium/1"  2 seq  3 tournament id  4 award time (s)  5 number of places n
--   then per place i = 1 .. n: player, prize, rating before, rating after

local function num(x)
  return string.format('%.17g', x)
end

local stored = redis.call('GET', KEYS[1])
if stored then
  return {0, stored}
end

local start, history_bound, places = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local seq = num(redis.call('INCR', KEYS[2]))
redis.call('RPUSH', KEYS[4 + 2 * places], KEYS[1])

local record = {'podium/1', seq, ARGV[1], ARGV[2], ARGV[5]}
for i = 1, places do
  local rating_key, history_key = KEYS[4 + 2 * (i - 1)], KEYS[5 + 2 * (i - 1)]
  local player, prize = ARGV[6 + 2 * (i - 1)], ARGV[7 + 2 * (i - 1)]
  local before = redis.call('HGET', rating_key, 'rating') or start
  local after = num(tonumber(before) + tonumber(prize))
  redis.call('HSET', rating_key, 'rating', after)
  redis.call('ZADD', KEYS[3], after, player)
  if redis.call('LPUSH', history_key, KEYS[1]) > history_bound then
    redis.call('LTRIM', history_key, 0, history_bound - 1)
  end
  for _, field in ipairs({player, prize, before, after}) do
    record[#record + 1] = field
  end
end

record = table.concat(record, '\n')
redis.call('SET', KEYS[1], record)
return {1, record}
