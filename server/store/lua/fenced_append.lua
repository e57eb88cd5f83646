-- Append a table's new events to its log and store its snapshot, only under the current owner
-- epoch: a node that lost the table's lease (paused, partitioned, and another node claimed it)
-- writes nothing.
--
-- KEYS[1]  the table's owner record ({t:<table>}:lease), a hash (see lease_claim.lua)
-- KEYS[2]  the table's event log ({t:<table>}:events), a list of msgpack events
-- KEYS[3]  the table's snapshot ({t:<table>}:snapshot), a msgpack string
-- ARGV[1]  the writer's epoch; "" writes without the check (a table no lease was taken for:
--          tools and old callers only)
-- ARGV[2]  time-to-live of the log and the snapshot, milliseconds
-- ARGV[3]  the most events the log keeps (older ones are trimmed)
-- ARGV[4]  the new snapshot, or "" for none
-- ARGV[5]  version of the first event given (the others follow it one by one), or "" when
--          not known (appended as given)
-- ARGV[6..] events to append, in version order (may be none)
--
-- The lease's field "v" keeps the highest version appended: an event at or below it is not
-- appended again (a write retried after its reply was lost, or cancelled after it was sent,
-- stores each version once).
--
-- Returns the log's length after the append (0 when no event was appended), or -1 when the
-- epoch is stale (nothing was written).
local lease = redis.call('HMGET', KEYS[1], 'epoch', 'v')
if ARGV[1] ~= '' and lease[1] ~= ARGV[1] then
    return -1
end
local from = 6
if #ARGV >= 6 and ARGV[5] ~= '' and lease[1] then
    local first = tonumber(ARGV[5])
    local stored = tonumber(lease[2] or '0')
    local last = first + #ARGV - 6
    if first <= stored then
        from = 6 + stored - first + 1
    end
    if last > stored then
        redis.call('HSET', KEYS[1], 'v', last)
    end
end
local length = 0
if #ARGV >= from then
    length = redis.call('RPUSH', KEYS[2], unpack(ARGV, from))
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
    local cap = tonumber(ARGV[3])
    if length > cap then
        redis.call('LTRIM', KEYS[2], -cap, -1)
    end
end
if ARGV[4] ~= '' then
    redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])
end
return length
