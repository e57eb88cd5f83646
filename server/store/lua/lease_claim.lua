-- Claim a table's owner lease: a new table's first lease, or the lease of a table whose owner
-- stopped renewing it (expired). One claimant wins: the claim is one atomic step, and the
-- epoch it hands out is one more than the last owner's, so every write of an earlier owner
-- (fenced_append.lua, fenced_result.lua) is refused from now on.
--
-- KEYS[1]  the table's lease ({t:<table>}:lease), a hash:
--            node     id of the owner node
--            epoch    integer, +1 on every claim (never reset while the key lives)
--            expires  Redis time (ms since the epoch) the lease runs out unless renewed
--            done     "1" once the table finished: never claimed again
--            v        highest event version appended to the log (fenced_append.lua)
-- ARGV[1]  node id of the claimant
-- ARGV[2]  lease time-to-live, milliseconds
-- ARGV[3]  time-to-live of the lease key itself, milliseconds (the table log's)
-- ARGV[4]  "new" (the key must not exist yet) or "takeover" (the lease must have expired)
--
-- Returns {epoch, previous owner}: epoch 0 when nothing was claimed (new: the key exists;
-- takeover: no such lease, a finished table, or a lease still running). Times are read from
-- the Redis clock (TIME), so node clocks never matter.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = redis.call('HMGET', KEYS[1], 'node', 'epoch', 'expires', 'done')
local previous = lease[1] or ''
local epoch
if ARGV[4] == 'new' then
    if lease[2] then
        return {0, previous}
    end
    epoch = 1
else
    if not lease[2] or lease[4] == '1' or tonumber(lease[3] or '0') > now then
        return {0, previous}
    end
    epoch = tonumber(lease[2]) + 1
end
redis.call('HSET', KEYS[1], 'node', ARGV[1], 'epoch', epoch, 'expires',
           now + tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {epoch, previous}
