-- Keep one chat message of a table's game.
--
-- KEYS[1]  the game's chat ({t:<table>}:chat:<game_no>), a list of JSON messages
-- ARGV[1]  the message (JSON)
-- ARGV[2]  the most messages kept (older ones are trimmed)
-- ARGV[3]  time-to-live of the list, milliseconds (a game record's age)
--
-- Returns the list's length before trimming.
local length = redis.call('RPUSH', KEYS[1], ARGV[1])
if length > tonumber(ARGV[2]) then
    redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return length
