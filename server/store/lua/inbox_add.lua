-- Keep events in a player's inbox, each once: an event whose id is already there is not
-- added again (a retried delivery writes the same ids).
--
-- KEYS[1]  the player's inbox ({p:<player>}:inbox), a list of JSON events
-- ARGV[1]  the most entries the inbox keeps (older ones are trimmed)
-- ARGV[2]  time-to-live of the inbox, milliseconds
-- ARGV[3], ARGV[4], ...  pairs: an event id, then the event (JSON)
--
-- Returns the number of events added.
local held = {}
local entries = redis.call('LRANGE', KEYS[1], 0, -1)
for i = 1, #entries do
    local ok, event = pcall(cjson.decode, entries[i])
    if ok and type(event) == 'table' and event['event_id'] ~= nil then
        held[tostring(event['event_id'])] = true
    end
end
local added = 0
for i = 3, #ARGV, 2 do
    if not held[ARGV[i]] then
        held[ARGV[i]] = true
        redis.call('RPUSH', KEYS[1], ARGV[i + 1])
        added = added + 1
    end
end
if added > 0 then
    redis.call('LTRIM', KEYS[1], -tonumber(ARGV[1]), -1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return added
