-- Claim a table's owner record: a new table's first claim, or a takeover (its owner node's
-- heartbeat ran out, or the owner handed the table over). A compare-and-set on the record
-- alone: the claimant read the record and names the epoch it saw; the claim succeeds only if
-- the epoch is still that one and the table is not done. So one claimant wins, and the epoch
-- it gets is one more than the last owner's: every write of an earlier owner
-- (fenced_append.lua, fenced_result.lua) is refused from now on. Whether the owner is dead is
-- the claimant's judgement (the node set, {nodes}:alive, is in another slot): a claim from a
-- node that was only paused is safe, the paused node's writes are fenced.
--
-- KEYS[1]  the table's owner record ({t:<table>}:lease), a hash:
--            node   id of the owner node
--            epoch  integer, +1 on every claim (never reset while the key lives)
--            free   "1" once the owner handed the table over (drain): any live node may
--                   claim it at once (cleared by the claim)
--            done   "1" once the table finished: never claimed again
--            v      highest event version appended to the log (fenced_append.lua)
-- ARGV[1]  node id of the claimant
-- ARGV[2]  time-to-live of the record itself, milliseconds (the table log's)
-- ARGV[3]  "new" (the key must not exist yet) or "takeover"
-- ARGV[4]  takeover: the epoch the claimant read (the claim fails if it changed)
--
-- Returns {epoch, previous owner}: epoch 0 when nothing was claimed (new: the key exists;
-- takeover: no such record, a finished table, or an epoch that changed since it was read).
-- No clock is read: the record has no expiry time, and nothing renews it.
local lease = redis.call('HMGET', KEYS[1], 'node', 'epoch', 'done')
local previous = lease[1] or ''
local epoch
if ARGV[3] == 'new' then
    if lease[2] then
        return {0, previous}
    end
    epoch = 1
else
    if not lease[2] or lease[3] == '1' or lease[2] ~= ARGV[4] then
        return {0, previous}
    end
    epoch = tonumber(lease[2]) + 1
    redis.call('HDEL', KEYS[1], 'free')
end
redis.call('HSET', KEYS[1], 'node', ARGV[1], 'epoch', epoch)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {epoch, previous}
