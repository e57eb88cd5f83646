-- settle_table42.lua: settle one Competitive game on the Table42 ladder, exactly once.
--
-- Reads both ratings and both 7-day windows, scores the game with the Table42 formula
-- (rating_plugin.table42.change: same operations in the same order), records the game in both
-- windows and trims them, then writes ratings, counts, the leaderboard, both histories, the
-- applied-order log and the settlement record, all in one atomic step. A game id that
-- already has a record (on either rated ladder) changes nothing.
--
-- KEYS[1]  settlement record, string (below)               P{rated}:game:<game_id>
-- KEYS[2]  Table42 sequence counter, string (integer)      P{rated}:table42:seq
-- KEYS[3]  winner rating, hash: rating, games, wins, losses, newest (finish ms of the newest
--          game in the window)
-- KEYS[4]  loser rating, hash
-- KEYS[5]  winner window, zset: member game id, score finish time (integer ms)
-- KEYS[6]  loser window, zset
-- KEYS[7]  winner history, list of record keys (KEYS[1] of each game), newest first
-- KEYS[8]  loser history, list
-- KEYS[9]  Table42 leaderboard, zset: member player, score rating
-- KEYS[10] Table42 applied-order log, list of record keys (KEYS[1] of each game and podium
--          award), oldest first: entry i (0-based) is the record whose seq is i + 1
--
-- ARGV[1]  game id
-- ARGV[2]  winner (player id)
-- ARGV[3]  loser (player id)
-- ARGV[4]  cube (1, 2, 4 ... 64), stored as given
-- ARGV[5]  cube coefficient c = 1 + log2(cube) / 6 (decimal float, full precision)
-- ARGV[6]  finish time as given by the caller (Unix seconds, decimal), stored as given
-- ARGV[7]  finish time T (integer ms): the game's score in the windows
-- ARGV[8]  window start T - 7 days (integer ms); games in [ARGV[8], T) count
-- ARGV[9]  retention R (integer ms, 7 days + late-settlement grace): after recording, entries
--          older than (newest game in the window - R) are removed
-- ARGV[10] T - R (integer ms): the trim bound when this game is the player's newest
-- ARGV[11] K below the heavy-week count (32)
-- ARGV[12] K from the heavy-week count on (16)
-- ARGV[13] heavy-week count (50 games in the window)
-- ARGV[14] divisor D of the expected score (1200)
-- ARGV[15] start rating of a player never seen (1500)
-- ARGV[16] reason (normal, gammon, backgammon, resign, drop, timeout, disconnect, leave)
-- ARGV[17] history bound (entries kept per player, >= 1)
--
-- Returns {applied, record}: applied is 1 when this call applied the game and 0 when the game
-- id already had a record (then nothing changed and the stored record comes back, whichever
-- ladder it was settled on). The record is what KEYS[1] holds: 21 fields joined by "\n" (ids
-- are printable, so they never contain one), every number as a decimal string (floats with 17
-- significant digits; a Lua number returned as such would be cut to an integer reply):
--   1 "table42/1"  2 seq  3 game id  4 reason  5 finish time (s)  6 cube  7 cube coefficient
--   8 winner  9 rating before  10 rating after  11 change  12 K  13 expected score
--   14 Competitive games in the window before this game
--   15 loser  16..21 the loser's fields, in the order of 9..14

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
local finish_ms, window_start = ARGV[7], ARGV[8]
local finish, retention = tonumber(ARGV[7]), tonumber(ARGV[9])
local heavy, divisor = tonumber(ARGV[13]), tonumber(ARGV[14])
local start, history_bound = ARGV[15], tonumber(ARGV[17])

local w = redis.call('HMGET', KEYS[3], 'rating', 'games', 'wins', 'losses', 'newest')
local l = redis.call('HMGET', KEYS[4], 'rating', 'games', 'wins', 'losses', 'newest')
local w_before, l_before = w[1] or start, l[1] or start
local w_rating, l_rating = tonumber(w_before), tonumber(l_before)

-- Games in [T - 7 days, T): the game itself is not in the set yet.
local w_recent = redis.call('ZCOUNT', KEYS[5], window_start, '(' .. finish_ms)
local l_recent = redis.call('ZCOUNT', KEYS[6], window_start, '(' .. finish_ms)
local w_k, l_k = ARGV[11], ARGV[11]
if w_recent >= heavy then w_k = ARGV[12] end
if l_recent >= heavy then l_k = ARGV[12] end

-- rating_plugin.table42.change: E_loser = 1 - E_winner; an overflowing power gives E = 0.
local w_expected = 1.0 / (1.0 + 10.0 ^ ((l_rating - w_rating) / divisor))
local l_expected = 1 - w_expected
local w_change = round_half_away(tonumber(w_k) * (1 - w_expected) * coefficient)
local l_change = round_half_away(tonumber(l_k) * (0 - l_expected) * coefficient)
local w_after, l_after = num(w_rating + w_change), num(l_rating + l_change)

-- Record the game, then trim relative to the newest game the player has (not to T): a late
-- settlement then leaves no entry that no future window can reach. Returns the new newest.
local function record_game(key, newest)
  redis.call('ZADD', key, finish_ms, game_id)
  local cutoff = ARGV[10]
  if newest and tonumber(newest) > finish then
    cutoff = num(tonumber(newest) - retention)
  else
    newest = finish_ms
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. cutoff)
  return newest
end
local w_newest = record_game(KEYS[5], w[5])
local l_newest = record_game(KEYS[6], l[5])

local seq = num(redis.call('INCR', KEYS[2]))
redis.call('RPUSH', KEYS[10], KEYS[1])

redis.call('HSET', KEYS[3], 'rating', w_after, 'games', num((tonumber(w[2]) or 0) + 1),
  'wins', num((tonumber(w[3]) or 0) + 1), 'newest', w_newest)
redis.call('HSET', KEYS[4], 'rating', l_after, 'games', num((tonumber(l[2]) or 0) + 1),
  'losses', num((tonumber(l[4]) or 0) + 1), 'newest', l_newest)
redis.call('ZADD', KEYS[9], w_after, winner, l_after, loser)

if redis.call('LPUSH', KEYS[7], KEYS[1]) > history_bound then
  redis.call('LTRIM', KEYS[7], 0, history_bound - 1)
end
if redis.call('LPUSH', KEYS[8], KEYS[1]) > history_bound then
  redis.call('LTRIM', KEYS[8], 0, history_bound - 1)
end

local record = table.concat({
  'table42/1', seq, game_id, ARGV[16], ARGV[6], ARGV[4], ARGV[5],
  winner, w_before, w_after, num(w_change), w_k, num(w_expected), num(w_recent),
  loser, l_before, l_after, num(l_change), l_k, num(l_expected), num(l_recent),
}, '\n')
redis.call('SET', KEYS[1], record)
return {1, record}
