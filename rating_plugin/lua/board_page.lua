-- board_page.lua: one page of a leaderboard with the rank of its first entry (read only).
--
-- Ranks are competition ranks: players with the same score share a rank, the next score's
-- rank skips (1, 2, 2, 4). Within a page the caller derives every rank from the first one.
--
-- KEYS[1]  leaderboard, zset: member player, score rating (or Boosted points)
--
-- ARGV[1]  first position, 0-based (best score first)
-- ARGV[2]  last position, 0-based, inclusive
--
-- Returns {first_rank, player, score, player, score, ...}, scores as Redis writes them
-- (decimal strings, exact); {} when the page is empty. first_rank is an integer, 1-based.

local page = redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2], 'WITHSCORES')
if #page == 0 then
  return {}
end
local above = redis.call('ZCOUNT', KEYS[1], '(' .. page[2], '+inf')
table.insert(page, 1, above + 1)
return page
