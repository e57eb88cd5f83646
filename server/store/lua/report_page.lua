-- The oldest open chat reports, for the operators.
--
-- KEYS[1]  {reports}:open    sorted set <table>/<msg>/<reporter> -> the report's number
-- KEYS[2]  {reports}:items   hash <table>/<msg>/<reporter> -> the report (JSON)
-- KEYS[3]  {reports}:stats   hash: last, refused
-- KEYS[4]  {reports}:chat    the earlier versions' list (adopted, then deleted)
-- ARGV[1]  reports returned at most
--
-- Returns {open, refused, number1, report1, number2, report2, ...}: how many are open, how
-- many were refused because the list was full, then the oldest ARGV[1] open reports.
-- include: report_legacy.lua
adopt_legacy(KEYS[4], KEYS[1], KEYS[2], KEYS[3])
local reply = {redis.call('ZCARD', KEYS[1]),
               tonumber(redis.call('HGET', KEYS[3], 'refused') or '0')}
local found = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
for i = 1, #found, 2 do
    reply[#reply + 1] = tonumber(found[i + 1])
    reply[#reply + 1] = redis.call('HGET', KEYS[2], found[i]) or '{}'
end
return reply
