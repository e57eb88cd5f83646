-- Store a finished game: the table's last events, its snapshot and the game's result, in one
-- step and only under the current owner epoch (a stale owner stores nothing; the fenced
-- append of the events is fenced_events.lua's, shared with fenced_append.lua). The rating
-- inbox entries are per player (another hash slot) and are written after, by the caller.
--
-- KEYS[1]  the table's owner record ({t:<table>}:lease), a hash (see lease_claim.lua)
-- KEYS[2]  the table's event log ({t:<table>}:events), a list of msgpack events
-- KEYS[3]  the table's snapshot ({t:<table>}:snapshot), a msgpack string
-- KEYS[4]  the table's results ({t:<table>}:results), a list of JSON results
-- ARGV[1]  the writer's epoch; "" writes without the check (see fenced_append.lua)
-- ARGV[2]  time-to-live of the log, snapshot and results, milliseconds
-- ARGV[3]  the most events the log keeps (older ones are trimmed)
-- ARGV[4]  the new snapshot, or "" for none
-- ARGV[5]  the result (JSON)
-- ARGV[6]  version of the first event given, or "" (see fenced_append.lua: an event at or
--          below the lease's "v" is not appended again)
-- ARGV[7]  the result's game id: a result already listed with it is not listed again (a
--          retried write lists each game once)
-- ARGV[8..] events to append, in version order (may be none)
--
-- Returns the results list's length, -1 when the epoch is stale, or -2 - v for a gap after
-- version v (see fenced_events.lua; nothing was written in either case).
-- include: fenced_events.lua
local appended = fenced_events(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4],
                               ARGV[6], 8)
if appended < 0 then
    return appended
end
local listed = redis.call('LRANGE', KEYS[4], 0, -1)
for i = 1, #listed do
    local ok, result = pcall(cjson.decode, listed[i])
    if ok and type(result) == 'table' and result['game_id'] == ARGV[7] then
        redis.call('PEXPIRE', KEYS[4], ARGV[2])
        return #listed
    end
end
local count = redis.call('RPUSH', KEYS[4], ARGV[5])
redis.call('PEXPIRE', KEYS[4], ARGV[2])
return count
