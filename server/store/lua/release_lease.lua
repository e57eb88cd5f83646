-- release_lease.lua: end a node's pairing lease on a pool after its pass, only if the node
-- still holds it (a lease that expired and was taken by another node is left alone).
--
-- With a hold time the lease is not deleted but kept for that long, so that no node pairs the
-- pool again before then: however many nodes run the pairing loop, a pool gets about one pass
-- per hold time.
--
-- KEYS[1]  the pool's lease, string: holder token, with a TTL   P mm:{mm}:lease:<pool id>
--
-- ARGV[1]  the token this node set with SET NX PX
-- ARGV[2]  hold time in milliseconds (integer; 0 = delete the lease now)
--
-- Returns 1 when the lease was released (or shortened to the hold time), 0 when this node no
-- longer held it.

if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local hold = tonumber(ARGV[2])
if hold > 0 then
  redis.call('PEXPIRE', KEYS[1], hold)
else
  redis.call('DEL', KEYS[1])
end
return 1
