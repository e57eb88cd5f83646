-- settle_table42.lua: settle one Competitive game on the Table42 ladder, exactly once.
--
-- Reads both ratings and both 7-day windows, scores the game with the Table42 formula
-- (rating_plugin.table42.change, same operations in the same order), records the game in both
-- windows, trims them, writes ratings, counts, histories, the leaderboard and the settlement
-- record, all in one atomic step. A game id that already has a record changes nothing.
--
-- KEYS[1]  settlement record, string (JSON)              P{rated}:game:<game_id>
-- KEYS[2]  Table42 sequence counter, string (integer)     P{rated}:table42:seq
-- KEYS[3]  winner rating, hash: rating, games, wins, losses
-- KEYS[4]  loser rating, hash
-- KEYS[5]  winner window, zset: member game id, score finish time (integer ms)
-- KEYS[6]  loser window, zset
-- KEYS[7]  winner history, list of JSON entries, newest first
-- KEYS[8]  loser history, list
-- KEYS[9]  Table42 leaderboard, zset: member player, score rating
--
-- ARGV[1]  game id
-- ARGV[2]  winner (player id)
-- ARGV[3]  loser (player id)
-- ARGV[4]  cube (1, 2, 4 ... 64), stored as given
-- ARGV[5]  cube coefficient c = 1 + log2(cube) / 6 (decimal float, full precision)
-- ARGV[6]  finish time as given by the caller (Unix seconds, decimal), stored as given
-- ARGV[7]  finish time T (integer ms): the game's score in the windows
-- ARGV[8]  window start T - 7 days (integer ms); games in [ARGV[8], T) count
-- ARGV[9]  retention (integer ms, 7 days + late-settlement grace): after recording, entries
--          older than (newest score in the window - retention) are removed; also the window's
--          time to live (PEXPIRE), so an idle player's window disappears
-- ARGV[10] K below the heavy-week count (32)
-- ARGV[11] K from the heavy-week count on (16)
-- ARGV[12] heavy-week count (50 games in the window)
-- ARGV[13] divisor D of the expected score (1200)
-- ARGV[14] start rating of a player never seen (1500)
-- ARGV[15] reason (normal, gammon, backgammon, resign, drop, timeout, disconnect, leave)
-- ARGV[16] history bound (entries kept per player, >= 1)
--
-- Returns {applied, record}: applied is 1 when this call applied the game and 0 when the game
-- id already had a record (then nothing changed and the stored record comes back, whichever
-- ladder it was settled on). The record is JSON whose numbers are all strings written with
-- 17 significant digits (a Lua number returned as such would be cut to an integer reply):
--   {"v","seq","ladder","game","reason","at","cube","c",
--    "w": {"p","b","a","d","k","e","n"}, "l": {...}}
--   p player, b rating before, a rating after, d change, k K factor, e expected score,
--   n Competitive games in the window before this game.

local function num(x)
  return string.format('%.17g', x)
end

-- Half away from zero, exactly as rating_plugin.round_half_away: x - trunc(x) is exact for
-- doubles, so comparing it with 0.5 is exact (floor(x + 0.5) is not: 0.49999999999999994).
local function round_half_away(x)
  local whole
  if x >= 0 then whole = math.floor(x) else whole = math.ceil(x) end
  local fraction = x - whole
  if fraction >= 0.5 then return whole + 1 end
  if fraction <= -0.5 then return whole - 1 end
  return whole + 0 -- + 0 turns -0 into 0
end

local stored = redis.call('GET', KEYS[1])
if stored then
  return {0, stored}
end

local game_id, winner, loser = ARGV[1], ARGV[2], ARGV[3]
local coefficient = tonumber(ARGV[5])
local finish_ms, window_start, retention = ARGV[7], ARGV[8], tonumber(ARGV[9])
local k_normal, k_heavy, heavy = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local divisor, start = tonumber(ARGV[13]), tonumber(ARGV[14])
local reason, history_bound = ARGV[15], tonumber(ARGV[16])

local function load(key)
  local v = redis.call('HMGET', key, 'rating', 'games', 'wins', 'losses')
  return tonumber(v[1]) or start, tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4]) or 0
end

local w_rating, w_games, w_wins, w_losses = load(KEYS[3])
local l_rating, l_games, l_wins, l_losses = load(KEYS[4])

-- Games in [T - 7 days, T): the game itself is not in the set yet.
local w_recent = redis.call('ZCOUNT', KEYS[5], window_start, '(' .. finish_ms)
local l_recent = redis.call('ZCOUNT', KEYS[6], window_start, '(' .. finish_ms)
local w_k = k_normal
if w_recent >= heavy then w_k = k_heavy end
local l_k = k_normal
if l_recent >= heavy then l_k = k_heavy end

-- rating_plugin.table42.change: E_loser = 1 - E_winner; an overflowing power gives E = 0.
local w_expected = 1.0 / (1.0 + 10.0 ^ ((l_rating - w_rating) / divisor))
local l_expected = 1 - w_expected
local w_change = round_half_away(w_k * (1 - w_expected) * coefficient)
local l_change = round_half_away(l_k * (0 - l_expected) * coefficient)
local w_after = w_rating + w_change
local l_after = l_rating + l_change

local function record_game(key)
  redis.call('ZADD', key, finish_ms, game_id)
  -- Trim relative to the newest game seen, not to T: a late settlement then cannot leave an
  -- entry that no future window can reach.
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. num(tonumber(newest[2]) - retention))
  redis.call('PEXPIRE', key, ARGV[9])
end
record_game(KEYS[5])
record_game(KEYS[6])

local seq = num(redis.call('INCR', KEYS[2]))

redis.call('HSET', KEYS[3], 'rating', num(w_after), 'games', num(w_games + 1),
  'wins', num(w_wins + 1), 'losses', num(w_losses))
redis.call('HSET', KEYS[4], 'rating', num(l_after), 'games', num(l_games + 1),
  'wins', num(l_wins), 'losses', num(l_losses + 1))
redis.call('ZADD', KEYS[9], num(w_after), winner, num(l_after), loser)

local function remember(key, entry)
  redis.call('LPUSH', key, cjson.encode(entry))
  redis.call('LTRIM', key, 0, history_bound - 1)
end
remember(KEYS[7], {seq = seq, ref = game_id, reason = reason, at = ARGV[6], opp = loser,
  res = 'win', b = num(w_rating), a = num(w_after), d = num(w_change)})
remember(KEYS[8], {seq = seq, ref = game_id, reason = reason, at = ARGV[6], opp = winner,
  res = 'loss', b = num(l_rating), a = num(l_after), d = num(l_change)})

local record = cjson.encode({
  v = '1', seq = seq, ladder = 'table42', game = game_id, reason = reason, at = ARGV[6],
  cube = ARGV[4], c = ARGV[5],
  w = {p = winner, b = num(w_rating), a = num(w_after), d = num(w_change), k = num(w_k),
       e = num(w_expected), n = num(w_recent)},
  l = {p = loser, b = num(l_rating), a = num(l_after), d = num(l_change), k = num(l_k),
       e = num(l_expected), n = num(l_recent)},
})
redis.call('SET', KEYS[1], record)
return {1, record}
