-- Give a table's owner record back, only from the owner that holds it.
--
-- KEYS[1]  the table's owner record ({t:<table>}:lease), a hash (see lease_claim.lua)
-- ARGV[1]  the releasing node's epoch for the table
-- ARGV[2]  "free": any live node may claim the table at once (a node draining on SIGTERM
--          hands its tables over); "done": the table finished (or was closed) and is never
--          claimed again
--
-- Returns 1 when released, 0 when the epoch is stale (someone else owns it: nothing changes).
-- The epoch stays, so the next claim still gets a higher one.
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] then
    return 0
end
if ARGV[2] == 'done' then
    redis.call('HSET', KEYS[1], 'done', 1)
else
    redis.call('HSET', KEYS[1], 'free', 1)
end
return 1
