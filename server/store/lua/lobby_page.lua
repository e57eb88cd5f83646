-- One page of the lobby index, in list order, in one round trip.
--
-- KEYS[1]  {lobby}:tables                         hash: table id -> JSON summary
-- KEYS[2]  {lobby}:index or {lobby}:index:<mode>  sorted set (score: list order)
-- ARGV[1]  offset (0-based)
-- ARGV[2]  limit (>= 1)
--
-- Returns: {total, summary, summary, ...}: the size of the index, then the JSON summaries of
-- the page (a table unlisted between the two reads is skipped). Read-only; its cost is
-- O(log n + limit), whatever the number of tables.
local total = redis.call('ZCARD', KEYS[2])
local offset = tonumber(ARGV[1])
local ids = redis.call('ZRANGE', KEYS[2], offset, offset + tonumber(ARGV[2]) - 1)
local out = {total}
if #ids > 0 then
    local rows = redis.call('HMGET', KEYS[1], unpack(ids))
    for i = 1, #rows do
        if rows[i] then
            out[#out + 1] = rows[i]
        end
    end
end
return out
