-- remove.lua: take a player's ticket out of whichever pool holds it (cancel).
--
-- KEYS[1]      player index, hash: player -> pool id                 P mm:{mm}:players
-- KEYS[2..n+1] every pool's tickets, hash: player -> ticket           P mm:{mm}:pool:<pool id>
--
-- ARGV[1]      player id
-- ARGV[2..n+1] pool ids, in the order of KEYS[2..n+1]
--
-- Returns the removed ticket (text), or "" when the player held none.

local player = ARGV[1]
local pool = redis.call('HGET', KEYS[1], player)
if not pool then
  return ''
end
redis.call('HDEL', KEYS[1], player)
for i = 2, #KEYS do
  if ARGV[i] == pool then
    local ticket = redis.call('HGET', KEYS[i], player)
    redis.call('HDEL', KEYS[i], player)
    return ticket or ''
  end
end
return ''
