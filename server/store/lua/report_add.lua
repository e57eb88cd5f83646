-- File a chat report for the operators: one per reporter and message, at most ARGV[5] open.
-- A full list refuses (and counts) the new report; it never drops an open one.
--
-- KEYS[1]  {reports}:open    sorted set <table>/<msg>/<reporter> -> the report's number
-- KEYS[2]  {reports}:items   hash <table>/<msg>/<reporter> -> the report (JSON)
-- KEYS[3]  {reports}:stats   hash: last (the last number given), refused
-- KEYS[4]  {reports}:filed:<reporter>  the reporter's reports in the window (expires with it)
-- KEYS[5]  {reports}:chat    the earlier versions' list (adopted, then deleted)
-- ARGV[1]  the report's key, <table>/<msg>/<reporter>
-- ARGV[2]  the report (JSON)
-- ARGV[3]  reports one account may file per window
-- ARGV[4]  the window, milliseconds
-- ARGV[5]  open reports kept at most
--
-- Returns {code, n}: {1, number} kept; {0, number} this reporter reported this message
-- already (nothing changed, nothing counted); {-1, ms} the reporter filed ARGV[3] reports in
-- this window (ms until it ends; nothing kept); {-2, refused} ARGV[5] reports are open: this
-- one is refused and counted (refused: the count so far).
-- include: report_legacy.lua
adopt_legacy(KEYS[5], KEYS[1], KEYS[2], KEYS[3])
local number = redis.call('ZSCORE', KEYS[1], ARGV[1])
if number then
    return {0, tonumber(number)}
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[5]) then
    return {-2, redis.call('HINCRBY', KEYS[3], 'refused', 1)}
end
local filed = tonumber(redis.call('GET', KEYS[4]) or '0')
if filed >= tonumber(ARGV[3]) then
    return {-1, math.max(0, redis.call('PTTL', KEYS[4]))}
end
redis.call('INCR', KEYS[4])
if filed == 0 then
    redis.call('PEXPIRE', KEYS[4], ARGV[4])
end
number = redis.call('HINCRBY', KEYS[3], 'last', 1)
redis.call('ZADD', KEYS[1], number, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return {1, number}
