-- Append a table's new events to its log and store its snapshot, only under the current owner
-- epoch: a node that lost the table's lease (paused, partitioned, and another node claimed it)
-- writes nothing.
--
-- KEYS[1]  the table's lease ({t:<table>}:lease), a hash (see lease_claim.lua)
-- KEYS[2]  the table's event log ({t:<table>}:events), a list of msgpack events
-- KEYS[3]  the table's snapshot ({t:<table>}:snapshot), a msgpack string
-- ARGV[1]  the writer's epoch; "" writes without the check (a table no lease was taken for:
--          tools and old callers only)
-- ARGV[2]  time-to-live of the log and the snapshot, milliseconds
-- ARGV[3]  the most events the log keeps (older ones are trimmed)
-- ARGV[4]  the new snapshot, or "" for none
-- ARGV[5..] events to append, in version order (may be none)
--
-- Returns the log's length after the append (0 when no event was given), or -1 when the
-- epoch is stale (nothing was written).
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] then
    return -1
end
local length = 0
if #ARGV > 4 then
    length = redis.call('RPUSH', KEYS[2], unpack(ARGV, 5))
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
