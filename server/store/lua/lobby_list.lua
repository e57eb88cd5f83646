-- List, update or unlist one table in the lobby index (kept as tables open and close).
--
-- KEYS[1]  {lobby}:tables       hash: table id -> JSON summary
-- KEYS[2]  {lobby}:index        sorted set of every listed table (score: list order)
-- KEYS[3]  {lobby}:index:<mode> sorted set of the listed tables of the table's mode
--          (to unlist a table of unknown mode: KEYS[3..n], every mode's set)
-- ARGV[1]  the table id
-- ARGV[2]  the JSON summary, or "" to unlist the table
-- ARGV[3]  the score (open tables first, newest first; see persistence.listing_score)
--
-- Returns: the number of listed tables after the change. Idempotent: listing twice with the
-- same summary, or unlisting a table that is not listed, changes nothing.
if ARGV[2] == '' then
    redis.call('HDEL', KEYS[1], ARGV[1])
    for i = 2, #KEYS do
        redis.call('ZREM', KEYS[i], ARGV[1])
    end
else
    redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
    redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
    redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
end
return redis.call('ZCARD', KEYS[2])
