-- Rewrite a table's event log from the start, only under the current owner epoch: the node
-- that took the table over found the log with a gap (a replica promoted before it had every
-- event) and carries on from the events before the gap. The log becomes exactly the events
-- given, and the lease's "v" their last version, so the next append (that version + 1) is
-- stored. Idempotent: the same arguments leave the same log.
--
-- KEYS[1]  the table's owner record ({t:<table>}:lease), a hash (see lease_claim.lua)
-- KEYS[2]  the table's event log ({t:<table>}:events), a list of msgpack events
-- ARGV[1]  the writer's epoch
-- ARGV[2]  time-to-live of the log, milliseconds
-- ARGV[3]  the version of the last event given (the lease's new "v")
-- ARGV[4..] the events, in version order
--
-- Returns the log's length, or -1 when the epoch is stale (nothing was written).
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if epoch ~= ARGV[1] then
    return -1
end
redis.call('DEL', KEYS[2])
local length = 0
if #ARGV >= 4 then
    length = redis.call('RPUSH', KEYS[2], unpack(ARGV, 4))
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
redis.call('HSET', KEYS[1], 'v', ARGV[3])
return length
