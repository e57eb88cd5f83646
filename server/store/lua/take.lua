-- take.lua: remove groups of tickets from one pool, each group only if every one of its
-- tickets is still the one the caller read. A pairing pass claims its pairs with groups of
-- two (so two nodes never hand the same player two games) and drops expired tickets with
-- groups of one. Groups are independent: a changed ticket only spoils its own group.
--
-- A ticket is "still the one read" while it starts with "t1\t<ticket id>\t": every enqueue
-- writes a fresh random 64-bit id, and a stored ticket is never edited in place.
--
-- KEYS[1]  player index, hash: player -> pool id                 P mm:{mm}:players
-- KEYS[2]  the pool's tickets, hash: player -> ticket             P mm:{mm}:pool:<pool id>
--
-- ARGV[1]  group size g (1 or 2)
-- ARGV[2]  pool id
-- ARGV[3..] the groups, one after another: player 1, ticket id 1, ..., player g, ticket id g
--
-- Returns one integer per group, in order: 1 = removed, 0 = left alone (a ticket was gone or
-- had been replaced).

local g = tonumber(ARGV[1])
local pool = ARGV[2]
local out = {}
local i = 3
while i + 2 * g - 1 <= #ARGV do
  local intact = 1
  for m = 0, g - 1 do
    local stored = redis.call('HGET', KEYS[2], ARGV[i + 2 * m])
    local head = 't1\t' .. ARGV[i + 2 * m + 1] .. '\t'
    if not stored or string.sub(stored, 1, #head) ~= head then
      intact = 0
      break
    end
  end
  if intact == 1 then
    for m = 0, g - 1 do
      local player = ARGV[i + 2 * m]
      redis.call('HDEL', KEYS[2], player)
      if redis.call('HGET', KEYS[1], player) == pool then
        redis.call('HDEL', KEYS[1], player)
      end
    end
  end
  out[#out + 1] = intact
  i = i + 2 * g
end
return out
