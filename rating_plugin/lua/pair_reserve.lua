-- pair_reserve.lua: count a rated game of a pair of players, unless the pair has played its
-- limit of rated games in the window (then the game is unrated: "pair_limit"). Decided when
-- the game starts, once per game (idempotent by its id).
--
-- KEYS[1]  the pair's rated games, zset: member game (table) id, score start time in ms
--          P{rated}:pair:<len(a)>:<a>:<b>  (a < b; the same slot as every rated key)
-- ARGV[1]  the game id
-- ARGV[2]  now, Unix ms
-- ARGV[3]  the window, ms (games that started earlier no longer count)
-- ARGV[4]  the limit: rated games the pair may play within the window
--
-- Returns {rated (1 or 0), games of the pair in the window counting this one if rated}.
-- A repeat for a game already counted answers {1, count} and changes nothing.
local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - tonumber(ARGV[3])))
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return {1, redis.call('ZCARD', KEYS[1])}
end
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[4]) then
  return {0, count}
end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, count + 1}
