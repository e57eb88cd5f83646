-- settle_fibs.lua: settle one rated n-point match on the FIBS ladder, exactly once.
--
-- Reads both ratings and experiences, scores the match with the FIBS formula
-- (rating_plugin.fibs.change: same operations in the same order), adds the match length to
-- both experiences and writes ratings, counts, the leaderboard (only players whose experience
-- reached the new-player bound), both histories, the applied-order log and the settlement
-- record, all in one atomic step. A game id that already has a record (on either rated
-- ladder) changes nothing.
--
-- KEYS[1]  settlement record, string (below)                P{rated}:game:<game_id>
-- KEYS[2]  FIBS sequence counter, string (integer)          P{rated}:fibs:seq
-- KEYS[3]  winner rating, hash: rating, games, wins, losses, experience
-- KEYS[4]  loser rating, hash
-- KEYS[5]  winner history, list of record keys (KEYS[1] of each match), newest first
-- KEYS[6]  loser history, list
-- KEYS[7]  FIBS leaderboard, zset: member player, score rating
-- KEYS[8]  FIBS applied-order log, list of record keys (KEYS[1] of each match), oldest
--          first: entry i (0-based) is the record whose seq is i + 1
--
-- ARGV[1]  game id (the match's id)
-- ARGV[2]  winner (player id)
-- ARGV[3]  loser (player id)
-- ARGV[4]  cube of the last game, stored as given (it does not change the numbers)
-- ARGV[5]  match length n (points, integer >= 1)
-- ARGV[6]  sqrt(n) (decimal float, full precision)
-- ARGV[7]  finish time as given by the caller (Unix seconds, decimal), stored as given
-- ARGV[8]  start rating of a player never seen (1500)
-- ARGV[9]  multiplier at experience 0 (5): multiplier = max(1, ARGV[9] - experience / 100)
-- ARGV[10] new-player bound (10): below this experience a player stays off the leaderboard
-- ARGV[11] reason (normal, gammon, backgammon, resign, drop, timeout, disconnect, leave)
-- ARGV[12] history bound (entries kept per player, >= 1)
--
-- Returns {applied, record}: applied is 1 when this call applied the match and 0 when the id
-- already had a record (then nothing changed and the stored record comes back, whichever
-- ladder it was settled on). The record is what KEYS[1] holds: 21 fields joined by "\n" (ids
-- are printable, so they never contain one), every number as a decimal string (floats with 17
-- significant digits; a Lua number returned as such would be cut to an integer reply):
--   1 "fibs/1"  2 seq  3 game id  4 reason  5 finish time (s)  6 cube  7 match length
--   8 winner  9 rating before  10 rating after  11 change  12 new-player multiplier
--   13 win probability  14 experience before the match
--   15 loser  16..21 the loser's fields, in the order of 9..14

local function num(x)
  return string.format('%.17g', x)
end

local stored = redis.call('GET', KEYS[1])
if stored then
  return {0, stored}
end

local game_id, winner, loser = ARGV[1], ARGV[2], ARGV[3]
local length, root = tonumber(ARGV[5]), tonumber(ARGV[6])
local start, max_multiplier, new_bound = ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10])
local history_bound = tonumber(ARGV[12])

local w = redis.call('HMGET', KEYS[3], 'rating', 'games', 'wins', 'losses', 'experience')
local l = redis.call('HMGET', KEYS[4], 'rating', 'games', 'wins', 'losses', 'experience')
local w_before, l_before = w[1] or start, l[1] or start
local w_rating, l_rating = tonumber(w_before), tonumber(l_before)
local w_exp, l_exp = tonumber(w[5]) or 0, tonumber(l[5]) or 0

-- rating_plugin.fibs.change; an overflowing power gives a probability of 0.
local probability = 1.0 / (1.0 + 10.0 ^ (-(w_rating - l_rating) * root / 2000))
local points = 4 * root * (1 - probability)
local w_multiplier = math.max(1.0, max_multiplier - w_exp / 100)
local l_multiplier = math.max(1.0, max_multiplier - l_exp / 100)
local w_change = points * w_multiplier
local l_change = 0.0 - points * l_multiplier
local w_after, l_after = num(w_rating + w_change), num(l_rating + l_change)
local w_exp_after, l_exp_after = w_exp + length, l_exp + length

local seq = num(redis.call('INCR', KEYS[2]))
redis.call('RPUSH', KEYS[8], KEYS[1])

redis.call('HSET', KEYS[3], 'rating', w_after, 'games', num((tonumber(w[2]) or 0) + 1),
  'wins', num((tonumber(w[3]) or 0) + 1), 'experience', num(w_exp_after))
redis.call('HSET', KEYS[4], 'rating', l_after, 'games', num((tonumber(l[2]) or 0) + 1),
  'losses', num((tonumber(l[4]) or 0) + 1), 'experience', num(l_exp_after))
if w_exp_after >= new_bound then
  redis.call('ZADD', KEYS[7], w_after, winner)
end
if l_exp_after >= new_bound then
  redis.call('ZADD', KEYS[7], l_after, loser)
end

if redis.call('LPUSH', KEYS[5], KEYS[1]) > history_bound then
  redis.call('LTRIM', KEYS[5], 0, history_bound - 1)
end
if redis.call('LPUSH', KEYS[6], KEYS[1]) > history_bound then
  redis.call('LTRIM', KEYS[6], 0, history_bound - 1)
end

local record = table.concat({
  'fibs/1', seq, game_id, ARGV[11], ARGV[7], ARGV[4], ARGV[5],
  winner, w_before, w_after, num(w_change), num(w_multiplier), num(probability), num(w_exp),
  loser, l_before, l_after, num(l_change), num(l_multiplier), num(1 - probability), num(l_exp),
}, '\n')
redis.call('SET', KEYS[1], record)
return {1, record}
