-- A fragment, not a script: server/store/scripts.py puts it in place of the include line of
-- fenced_append.lua and fenced_result.lua, which pass it their own keys and arguments.
-- It defines:
--
-- fenced_events(lease_key, log_key, snapshot_key, epoch, ttl, cap, snapshot, first, from)
--   lease_key     the table's owner record ({t:<table>}:lease), a hash (see lease_claim.lua)
--   log_key       the table's event log ({t:<table>}:events), a list of msgpack events
--   snapshot_key  the table's snapshot ({t:<table>}:snapshot), a msgpack string
--   epoch         the writer's epoch; "" writes without the check (a table no lease was
--                 taken for: tools and old callers only)
--   ttl           time-to-live of the log and the snapshot, milliseconds
--   cap           the most events the log keeps (older ones are trimmed)
--   snapshot      the new snapshot, or "" for none
--   first         version of the first event given (the others follow it one by one), or ""
--                 when not known (appended as given)
--   from          the index in ARGV of the first event to append (ARGV[from..], in version
--                 order; may be none)
--
-- Only under the current owner epoch: a node that lost the table's lease (paused,
-- partitioned, and another node claimed it) writes nothing. The lease's field "v" keeps the
-- highest version appended: an event at or below it is not appended again (a write retried
-- after its reply was lost, or cancelled after it was sent, stores each version once).
--
-- A gap: events that start past the lease's "v" + 1 (the store lost the versions between:
-- a replica promoted before it had them) are not appended, nor is the snapshot: the writer
-- writes the missing ones first (server/store/persistence.py).
--
-- Returns -1 when the epoch is stale (nothing was written), -2 - v for a gap after version v
-- (nothing was written), else the log's length after the append (0 when no event was
-- appended).
local function fenced_events(lease_key, log_key, snapshot_key, epoch, ttl, cap, snapshot,
                             first, from)
    local lease = redis.call('HMGET', lease_key, 'epoch', 'v')
    if epoch ~= '' and lease[1] ~= epoch then
        return -1
    end
    local start = from
    if #ARGV >= from and first ~= '' and lease[1] then
        local first_v = tonumber(first)
        local stored = tonumber(lease[2] or '0')
        local last = first_v + #ARGV - from
        if lease[2] and first_v > stored + 1 then
            return -2 - stored
        end
        if first_v <= stored then
            start = from + stored - first_v + 1
        end
        if last > stored then
            redis.call('HSET', lease_key, 'v', last)
        end
    end
    local length = 0
    if #ARGV >= start then
        length = redis.call('RPUSH', log_key, unpack(ARGV, start))
        redis.call('PEXPIRE', log_key, ttl)
        local kept = tonumber(cap)
        if length > kept then
            redis.call('LTRIM', log_key, -kept, -1)
        end
    end
    if snapshot ~= '' then
        redis.call('SET', snapshot_key, snapshot, 'PX', ttl)
    end
    return length
end
