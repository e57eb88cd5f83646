-- Index one finished game in one player's history (idempotent by game id).
--
-- KEYS[1]  the player's games ({p:<player>}:games), a sorted set: game id -> finished_at
-- KEYS[2]  the player's public games ({p:<player>}:games:public), the same for public games
-- KEYS[3]  the player's rows ({p:<player>}:game_rows), a hash: game id -> row (JSON)
-- ARGV[1]  the game id
-- ARGV[2]  when it finished (Unix seconds)
-- ARGV[3]  the player's row (JSON)
-- ARGV[4]  "1" when the game is public (listed to anyone), "0" when private
-- ARGV[5]  the most games kept per player (older ones drop out, their rows too)
-- ARGV[6]  time-to-live of the three keys, milliseconds (a record's age)
-- ARGV[7]  the oldest finished_at kept (Unix seconds): older entries drop out
--
-- Returns the number of games indexed for the player.
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
if ARGV[4] == '1' then
    redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
end
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[7])
local count = redis.call('ZCARD', KEYS[1])
local cap = tonumber(ARGV[5])
if count - #gone > cap then
    local extra = redis.call('ZRANGE', KEYS[1], #gone, count - cap - 1)
    for _, id in ipairs(extra) do
        gone[#gone + 1] = id
    end
end
for _, id in ipairs(gone) do
    redis.call('ZREM', KEYS[1], id)
    redis.call('ZREM', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
end
for i = 1, 3 do
    if redis.call('EXISTS', KEYS[i]) == 1 then
        redis.call('PEXPIRE', KEYS[i], ARGV[6])
    end
end
return redis.call('ZCARD', KEYS[1])
