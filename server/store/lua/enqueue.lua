-- enqueue.lua: put a player's ticket in a pool, replacing any ticket the player holds in any
-- pool, so a player never waits in two pools (or twice in one).
--
-- KEYS[1]      player index, hash: player -> pool id                 P mm:{mm}:players
-- KEYS[2..n+1] every pool's tickets, hash: player -> ticket           P mm:{mm}:pool:<pool id>
--              (n pools, in the order of ARGV[5..n+4])
--
-- ARGV[1]      player id
-- ARGV[2]      target pool position, 1..n (the pool KEYS[ARGV[2] + 1] and ARGV[ARGV[2] + 4])
-- ARGV[3]      the ticket (text, stored as given)
-- ARGV[4]      mode: "replace" (queue or re-queue) or "absent" (only when the player holds no
--              ticket at all: used to put a ticket back after a failed game start)
-- ARGV[5..n+4] pool ids, in the order of KEYS[2..n+1]
-- ARGV[n+5]    most tickets a pool may hold (integer; 0 = no limit)
--
-- Returns {status, previous pool id or ""}: status 1 = stored, 0 = not stored because the
-- player holds a ticket ("absent" mode), -1 = not stored because the pool is full.

local player = ARGV[1]
local target = tonumber(ARGV[2])
local n = #KEYS - 1
local target_key = KEYS[target + 1]
local target_pool = ARGV[target + 4]
local limit = tonumber(ARGV[n + 5])

local previous = redis.call('HGET', KEYS[1], player)
if previous and ARGV[4] == 'absent' then
  return {0, previous}
end
if limit > 0 and redis.call('HEXISTS', target_key, player) == 0
    and redis.call('HLEN', target_key) >= limit then
  return {-1, previous or ''}
end
if previous then
  for i = 1, n do
    if ARGV[i + 4] == previous then
      redis.call('HDEL', KEYS[i + 1], player)
    end
  end
end
redis.call('HSET', target_key, player, ARGV[3])
redis.call('HSET', KEYS[1], player, target_pool)
return {1, previous or ''}
