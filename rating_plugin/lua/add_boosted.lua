-- add_boosted.lua: add a Boosted game's points to the winner, once per game id.
--
-- Boosted games never touch Elo: only the Boosted leaderboard changes.
--
-- KEYS[1]  Boosted record, string (JSON)                  P{boosted}:game:<game_id>
-- KEYS[2]  Boosted leaderboard, zset: member player, score points
--
-- ARGV[1]  game id
-- ARGV[2]  winner (player id)
-- ARGV[3]  loser (player id)
-- ARGV[4]  game points (result x cube, integer >= 1)
-- ARGV[5]  finish time as given by the caller (Unix seconds, decimal), stored as given
--
-- Returns {applied, record}: applied is 1 when this call added the points and 0 when the
-- game id already had a record (nothing changed; the stored record comes back). The record
-- is JSON whose numbers are all strings:
--   {"v","game","w","l","pts","at","total"}  total: the winner's points after this game.

local stored = redis.call('GET', KEYS[1])
if stored then
  return {0, stored}
end

local total = redis.call('ZINCRBY', KEYS[2], ARGV[4], ARGV[2])
local record = cjson.encode({v = '1', game = ARGV[1], w = ARGV[2], l = ARGV[3], pts = ARGV[4],
  at = ARGV[5], total = total})
redis.call('SET', KEYS[1], record)
return {1, record}
