-- A node says it is alive: one write per node and heartbeat period, whatever its table count.
--
-- KEYS[1]  {nodes}:alive, a sorted set: node id -> Redis time (ms) until which it counts as
--          alive (a node whose time is past is dead: its tables may be claimed)
-- KEYS[2]  {nodes}:online, a hash: node id -> authenticated players connected there
-- KEYS[3]  {nodes}:lag, a hash: node id -> its event loop's lag, ms (optional key)
-- ARGV[1]  the node id
-- ARGV[2]  how long the node counts as alive from now, milliseconds
-- ARGV[3]  the players connected to the node now, or "" to leave its count as it is
-- ARGV[4]  the node's event loop lag now (ms), or "" (or absent) to leave it as it is
--
-- Returns {now, previous}: the Redis clock (ms) and the node's time before this write (-1:
-- none). previous < now means the node was dead for its peers (paused past its heartbeat,
-- its loop stuck past its limit, cut off from Redis, or restarted under the same id): some
-- of its tables may be claimed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local previous = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
if ARGV[3] ~= '' then
    redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
if KEYS[3] and ARGV[4] and ARGV[4] ~= '' then
    redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
end
if previous then
    return {now, math.floor(tonumber(previous))}
end
return {now, -1}
