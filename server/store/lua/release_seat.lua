-- Release a player's seat lock, but only if it still points at the given table.
--
-- KEYS[1]  the player's seat key ({p:<player>}:seat), a string holding a table id
-- ARGV[1]  the table id the caller is releasing
--
-- Returns: 1 if the key held ARGV[1] and was deleted, 0 otherwise (no key, or another table:
-- the player already sits elsewhere and that seat must survive).
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
