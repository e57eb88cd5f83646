-- settle_fibs.lua: settle one rated n-point match on the FIBS ladder, exactly once.
--
-- Reads both ratings and experiences, scores the match with the FIBS formula
-- (rating_plugin.fibs.change, same operations in the same order), adds the match length to
-- both experiences and writes ratings, counts, histories, the leaderboard (only players with
-- experience >= the new-player bound) and the settlement record, all in one atomic step.
-- A game id that already has a record changes nothing.
--
-- KEYS[1]  settlement record, string (JSON)               P{rated}:game:<game_id>
-- KEYS[2]  FIBS sequence counter, string (integer)         P{rated}:fibs:seq
-- KEYS[3]  winner rating, hash: rating, games, wins, losses, experience
-- KEYS[4]  loser rating, hash
-- KEYS[5]  winner history, list of JSON entries, newest first
-- KEYS[6]  loser history, list
-- KEYS[7]  FIBS leaderboard, zset: member player, score rating
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
-- ladder it was settled on). The record is JSON whose numbers are all strings written with
-- 17 significant digits (a Lua number returned as such would be cut to an integer reply):
--   {"v","seq","ladder","game","reason","at","cube","len",
--    "w": {"p","b","a","d","m","e","x"}, "l": {...}}
--   p player, b rating before, a rating after, d change, m multiplier, e win probability,
--   x experience before the match.

local function num(x)
  return string.format('%.17g', x)
end

local stored = redis.call('GET', KEYS[1])
if stored then
  return {0, stored}
end

local game_id, winner, loser = ARGV[1], ARGV[2], ARGV[3]
local length, root = tonumber(ARGV[5]), tonumber(ARGV[6])
local start, max_multiplier, new_bound = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local reason, history_bound = ARGV[11], tonumber(ARGV[12])

local function load(key)
  local v = redis.call('HMGET', key, 'rating', 'games', 'wins', 'losses', 'experience')
  return tonumber(v[1]) or start, tonumber(v[2]) or 0, tonumber(v[3]) or 0,
    tonumber(v[4]) or 0, tonumber(v[5]) or 0
end

local w_rating, w_games, w_wins, w_losses, w_exp = load(KEYS[3])
local l_rating, l_games, l_wins, l_losses, l_exp = load(KEYS[4])

-- rating_plugin.fibs.change; an overflowing power gives a probability of 0.
local probability = 1.0 / (1.0 + 10.0 ^ (-(w_rating - l_rating) * root / 2000))
local points = 4 * root * (1 - probability)
local w_multiplier = math.max(1.0, max_multiplier - w_exp / 100)
local l_multiplier = math.max(1.0, max_multiplier - l_exp / 100)
local w_change = points * w_multiplier
local l_change = 0.0 - points * l_multiplier
local w_after = w_rating + w_change
local l_after = l_rating + l_change
local w_exp_after = w_exp + length
local l_exp_after = l_exp + length

local seq = num(redis.call('INCR', KEYS[2]))

redis.call('HSET', KEYS[3], 'rating', num(w_after), 'games', num(w_games + 1),
  'wins', num(w_wins + 1), 'losses', num(w_losses), 'experience', num(w_exp_after))
redis.call('HSET', KEYS[4], 'rating', num(l_after), 'games', num(l_games + 1),
  'wins', num(l_wins), 'losses', num(l_losses + 1), 'experience', num(l_exp_after))
if w_exp_after >= new_bound then
  redis.call('ZADD', KEYS[7], num(w_after), winner)
end
if l_exp_after >= new_bound then
  redis.call('ZADD', KEYS[7], num(l_after), loser)
end

local function remember(key, entry)
  redis.call('LPUSH', key, cjson.encode(entry))
  redis.call('LTRIM', key, 0, history_bound - 1)
end
remember(KEYS[5], {seq = seq, ref = game_id, reason = reason, at = ARGV[7], opp = loser,
  res = 'win', b = num(w_rating), a = num(w_after), d = num(w_change)})
remember(KEYS[6], {seq = seq, ref = game_id, reason = reason, at = ARGV[7], opp = winner,
  res = 'loss', b = num(l_rating), a = num(l_after), d = num(l_change)})

local record = cjson.encode({
  v = '1', seq = seq, ladder = 'fibs', game = game_id, reason = reason, at = ARGV[7],
  cube = ARGV[4], len = ARGV[5],
  w = {p = winner, b = num(w_rating), a = num(w_after), d = num(w_change),
       m = num(w_multiplier), e = num(probability), x = num(w_exp)},
  l = {p = loser, b = num(l_rating), a = num(l_after), d = num(l_change),
       m = num(l_multiplier), e = num(1 - probability), x = num(l_exp)},
})
redis.call('SET', KEYS[1], record)
return {1, record}
