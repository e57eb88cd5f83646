-- board_rank.lua: a player's competition rank and score on a leaderboard (read only).
--
-- KEYS[1]  leaderboard, zset: member player, score rating (or Boosted points)
--
-- ARGV[1]  player
--
-- Returns {rank, score}: rank is 1 + the number of players with a strictly higher score
-- (an integer), score the player's score as Redis writes it (decimal string, exact); nil
-- when the player is not on the leaderboard.

local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then
  return nil
end
return {redis.call('ZCOUNT', KEYS[1], '(' .. score, '+inf') + 1, score}
