-- add_boosted.lua: add a Boosted game's points to the winner, once per game id.
--
-- Boosted games never touch Elo: only the Boosted leaderboard changes.
--
-- KEYS[1]  Boosted record, string (below)                  P{boosted}:game:<game_id>
-- KEYS[2]  Boosted leaderboard, zset: member player, score points
--
-- ARGV[1]  game id
-- ARGV[2]  winner (player id)
-- ARGV[3]  loser (player id)
-- ARGV[4]  game points (result x cube, integer >= 1)
-- ARGV[5]  finish time as given by the caller (Unix seconds, decimal), stored as given
--
-- Returns {applied, record}: applied is 1 when this call added the points and 0 when the
-- game id already had a record (nothing changed; the stored record comes back). The record is
-- what KEYS[1] holds: fields joined by "\n", numbers as decimal strings:
--   1 "boosted/1"  2 game id  3 winner  4 loser  5 points  6 finish time (s)
--   7 the winner's Boosted total after this game

local stored = redis.call('GET', KEYS[1])
if stored then
  return {0, stored}
end

local total = redis.call('ZINCRBY', KEYS[2], ARGV[4], ARGV[2])
local record = table.concat({'boosted/1', ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], total},
  '\n')
redis.call('SET', KEYS[1], record)
return {1, record}
