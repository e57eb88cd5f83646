-- Remove delivered rating events from a player's inbox, by event id.
--
-- KEYS[1]  the player's inbox ({p:<player>}:inbox), a list of JSON events
-- ARGV     the event ids (the events' "event_id") that were delivered
--
-- Returns: the number of entries removed. Idempotent: an id already removed removes nothing.
local wanted = {}
for i = 1, #ARGV do
    wanted[ARGV[i]] = true
end
local removed = 0
local entries = redis.call('LRANGE', KEYS[1], 0, -1)
for i = 1, #entries do
    local ok, event = pcall(cjson.decode, entries[i])
    if ok and type(event) == 'table' and wanted[tostring(event['event_id'])] then
        removed = removed + redis.call('LREM', KEYS[1], 1, entries[i])
    end
end
return removed
