-- read_pool.lua: every ticket of one pool as ONE string, for a pairing pass.
--
-- The same data as HGETALL, but a single bulk reply: a client parses one 1.5 MB string far
-- faster than 20,000 small ones (10,000 tickets). Players and tickets never contain "\n"
-- (every text field of a ticket is printable), so "\n" separates them safely.
--
-- KEYS[1]  the pool's tickets, hash: player -> ticket            P mm:{mm}:pool:<pool id>
--
-- ARGV     none
--
-- Returns "player\nticket\nplayer\nticket..." (HGETALL order), or "" for an empty pool.

return table.concat(redis.call('HGETALL', KEYS[1]), '\n')
