-- release_lease.lua: end a node's pairing lease on a pool, only if the node still holds it
-- (a lease that expired and was taken by another node is left alone).
--
-- KEYS[1]  the pool's lease, string: holder token, with a TTL   P mm:{mm}:lease:<pool id>
--
-- ARGV[1]  the token this node set with SET NX PX
--
-- Returns 1 when the lease was released, 0 when this node no longer held it.

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
