-- How many authenticated players are connected, over the nodes alive now.
--
-- KEYS[1]  the alive nodes ({nodes}:alive), a sorted set: node -> alive until (ms)
-- KEYS[2]  the online counts ({nodes}:online), a hash: node -> players connected there
-- ARGV[1]  now (ms)
--
-- Returns the sum of the counts of the nodes whose alive time is not past.
local nodes = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf')
local total = 0
if #nodes > 0 then
    local counts = redis.call('HMGET', KEYS[2], unpack(nodes))
    for _, count in ipairs(counts) do
        if count then
            total = total + tonumber(count)
        end
    end
end
return total
