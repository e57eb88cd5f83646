-- board_view.lua: one page of a leaderboard, its size, and one named player's place on it, in
-- one read (read only).
--
-- Ranks are competition ranks: players with the same score share a rank, the next score's
-- rank skips (1, 2, 2, 4). Within a page the caller derives every rank from the first one.
--
-- KEYS[1]  leaderboard, zset: member player, score rating (or Boosted points)
-- KEYS[2]  optional: the named player's rating hash on a rated ladder (rating, experience),
--          for the rating of a player who is not on the board (FIBS: still "new")
--
-- ARGV[1]  first position, 0-based (best score first)
-- ARGV[2]  last position, 0-based, inclusive
-- ARGV[3]  the named player, or '' for none
--
-- Returns {total, first_rank, page, rank, score, rating, experience}: total is the number of
-- players on the board; page is {player, score, player, score, ...} (scores as Redis writes
-- them: exact decimal strings), first_rank the rank of its first entry (0 when the page is
-- empty); rank and score are the named player's (nil when not on the board or none named);
-- rating and experience are the fields of KEYS[2] (nil when absent or no KEYS[2]).

local total = redis.call('ZCARD', KEYS[1])
local page = redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2], 'WITHSCORES')
local first_rank = 0
if #page > 0 then
  first_rank = redis.call('ZCOUNT', KEYS[1], '(' .. page[2], '+inf') + 1
end
local rank, score, rating, experience = false, false, false, false
if ARGV[3] ~= '' then
  score = redis.call('ZSCORE', KEYS[1], ARGV[3])
  if score then
    rank = redis.call('ZCOUNT', KEYS[1], '(' .. score, '+inf') + 1
  end
  if KEYS[2] then
    local fields = redis.call('HMGET', KEYS[2], 'rating', 'experience')
    rating, experience = fields[1], fields[2]
  end
end
return {total, first_rank, page, rank, score, rating, experience}
