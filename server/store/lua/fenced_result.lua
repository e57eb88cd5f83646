-- Store a finished game: the table's last events, its snapshot and the game's result, in one
-- step and only under the current owner epoch (a stale owner stores nothing). The rating
-- inbox entries are per player (another hash slot) and are written after, by the caller.
--
-- KEYS[1]  the table's owner record ({t:<table>}:lease), a hash (see lease_claim.lua)
-- KEYS[2]  the table's event log ({t:<table>}:events), a list of msgpack events
-- KEYS[3]  the table's snapshot ({t:<table>}:snapshot), a msgpack string
-- KEYS[4]  the table's results ({t:<table>}:results), a list of JSON results
-- ARGV[1]  the writer's epoch; "" writes without the check (see fenced_append.lua)
-- ARGV[2]  time-to-live of the log, snapshot and results, milliseconds
-- ARGV[3]  the most events the log keeps (older ones are trimmed)
-- ARGV[4]  the new snapshot, or "" for none
-- ARGV[5]  the result (JSON)
-- ARGV[6]  version of the first event given, or "" (see fenced_append.lua: an event at or
--          below the lease's "v" is not appended again)
-- ARGV[7]  the result's game id: a result already listed with it is not listed again (a
--          retried write lists each game once)
-- ARGV[8..] events to append, in version order (may be none)
--
-- Returns the results list's length, or -1 when the epoch is stale (nothing was written).
local lease = redis.call('HMGET', KEYS[1], 'epoch', 'v')
if ARGV[1] ~= '' and lease[1] ~= ARGV[1] then
    return -1
end
local from = 8
if #ARGV >= 8 and ARGV[6] ~= '' and lease[1] then
    local first = tonumber(ARGV[6])
    local stored = tonumber(lease[2] or '0')
    local last = first + #ARGV - 8
    if first <= stored then
        from = 8 + stored - first + 1
    end
    if last > stored then
        redis.call('HSET', KEYS[1], 'v', last)
    end
end
if #ARGV >= from then
    local length = redis.call('RPUSH', KEYS[2], unpack(ARGV, from))
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
    local cap = tonumber(ARGV[3])
    if length > cap then
        redis.call('LTRIM', KEYS[2], -cap, -1)
    end
end
if ARGV[4] ~= '' then
    redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])
end
local listed = redis.call('LRANGE', KEYS[4], 0, -1)
for i = 1, #listed do
    local ok, result = pcall(cjson.decode, listed[i])
    if ok and type(result) == 'table' and result['game_id'] == ARGV[7] then
        redis.call('PEXPIRE', KEYS[4], ARGV[2])
        return #listed
    end
end
local count = redis.call('RPUSH', KEYS[4], ARGV[5])
redis.call('PEXPIRE', KEYS[4], ARGV[2])
return count
