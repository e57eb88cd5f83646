-- One page of a player's history, newest first.
--
-- KEYS[1]  the player's games, or public games ({p:<player>}:games[:public]), a sorted set
-- KEYS[2]  the player's rows ({p:<player>}:game_rows), a hash: game id -> row (JSON)
-- ARGV[1]  offset (rows to skip)
-- ARGV[2]  limit (rows at most)
-- ARGV[3]  the oldest finished_at shown (Unix seconds): older entries count as gone
--
-- Returns {total, row, row, ...}: the entries not older than ARGV[3], and the page's rows
-- (a row whose hash entry is missing is left out).
local total = redis.call('ZCOUNT', KEYS[1], ARGV[3], '+inf')
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', ARGV[3], 'LIMIT', ARGV[1], ARGV[2])
local out = {total}
if #ids > 0 then
    local rows = redis.call('HMGET', KEYS[2], unpack(ids))
    for _, row in ipairs(rows) do
        if row then
            out[#out + 1] = row
        end
    end
end
return out
