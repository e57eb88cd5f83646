-- Extend a table's owner lease, only for the owner that holds it now.
--
-- KEYS[1]  the table's lease ({t:<table>}:lease), a hash (see lease_claim.lua)
-- ARGV[1]  the renewing node's epoch for the table (the one its claim returned)
-- ARGV[2]  lease time-to-live, milliseconds
--
-- Returns 1 when renewed (the lease now runs out ARGV[2] ms from the Redis clock), 0 when the
-- epoch is stale (another node claimed the table: the caller has lost it and lets it go), the
-- table finished, or the lease is gone. A lease that expired but that nobody claimed yet is
-- renewed: no other node can have written under it.
local lease = redis.call('HMGET', KEYS[1], 'epoch', 'done')
if lease[1] ~= ARGV[1] or lease[2] == '1' then
    return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'expires', now + tonumber(ARGV[2]))
return 1
