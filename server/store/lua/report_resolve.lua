-- Close open chat reports (an operator dealt with them): their places are free again, and
-- their reporters may report those messages again.
--
-- KEYS[1]  {reports}:open    sorted set <table>/<msg>/<reporter> -> the report's number
-- KEYS[2]  {reports}:items   hash <table>/<msg>/<reporter> -> the report (JSON)
-- KEYS[3]  {reports}:stats   hash: last, refused
-- KEYS[4]  {reports}:chat    the earlier versions' list (adopted, then deleted)
-- ARGV     the reports' numbers
--
-- Returns the numbers that were not open (nothing done for them).
-- include: report_legacy.lua
adopt_legacy(KEYS[4], KEYS[1], KEYS[2], KEYS[3])
local missing = {}
for _, number in ipairs(ARGV) do
    local found = redis.call('ZRANGEBYSCORE', KEYS[1], number, number)
    if #found == 0 then
        missing[#missing + 1] = number
    else
        redis.call('ZREM', KEYS[1], found[1])
        redis.call('HDEL', KEYS[2], found[1])
    end
end
return missing
