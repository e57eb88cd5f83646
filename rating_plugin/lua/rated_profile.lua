-- rated_profile.lua: a player's standing on both rated ladders in one read (read only).
--
-- KEYS[1]  Table42 rating hash: rating, games, wins, losses
-- KEYS[2]  FIBS rating hash: rating, games, wins, losses, experience
-- KEYS[3]  Table42 leaderboard, zset: member player, score rating
-- KEYS[4]  FIBS leaderboard, zset (players with experience >= 10 only)
-- KEYS[5]  the player's 7-day window of Competitive games, zset: member game id, score ms
--
-- ARGV[1]  player
-- ARGV[2]  window start, integer ms (inclusive): now - 7 days
-- ARGV[3]  now, integer ms (exclusive)
--
-- Returns a flat list of 12 values (nil where a field or rank is absent):
--   1..4  Table42 rating, games, wins, losses      5..9  FIBS rating, games, wins, losses,
--   experience    10 Table42 rank    11 FIBS rank    12 Competitive games in the window
-- Ranks are competition ranks (1 + players with a strictly higher score), integers.

local function rank(board)
  local score = redis.call('ZSCORE', board, ARGV[1])
  if not score then
    return false
  end
  return redis.call('ZCOUNT', board, '(' .. score, '+inf') + 1
end

local t = redis.call('HMGET', KEYS[1], 'rating', 'games', 'wins', 'losses')
local f = redis.call('HMGET', KEYS[2], 'rating', 'games', 'wins', 'losses', 'experience')
local recent = redis.call('ZCOUNT', KEYS[5], ARGV[2], '(' .. ARGV[3])
return {t[1], t[2], t[3], t[4], f[1], f[2], f[3], f[4], f[5], rank(KEYS[3]), rank(KEYS[4]),
  recent}
