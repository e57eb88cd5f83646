-- The login throttle of one account: check before the password is hashed, record after.
--
-- KEYS[1]  {a:<player>}:login_failures  hash: "*" -> failures from anywhere;
--          "n:<addr>" -> failures from that address; "t:<addr>" -> time of the last one;
--          "lock:<addr>" -> time the address is locked out of this account until
-- KEYS[2]  {a:<player>}:login_known     set of addresses that logged in successfully
-- ARGV[1]  mode: "check", "fail" or "ok"
-- ARGV[2]  the client's address (its network: an IPv6 /64)
-- ARGV[3]  now (seconds, float)
-- ARGV[4]  free failures per address before a delay
-- ARGV[5]  first delay, seconds (doubles with each further failure)
-- ARGV[6]  failures per address that lock it out for ARGV[7] seconds
-- ARGV[7]  lock time, seconds
-- ARGV[8]  failures from all addresses after which unknown addresses must wait
-- ARGV[9]  seconds failures are remembered (the hash expires that long after the last one)
--
-- Returns: "check": the seconds to wait before this address may try again (0 = go on), as a
-- string; "fail"/"ok": "0". An address that logged in successfully before (in KEYS[2]) is
-- never held back by failures from other addresses: only its own count against it.
local addr = ARGV[2]
local now = tonumber(ARGV[3])
local free = tonumber(ARGV[4])
local base = tonumber(ARGV[5])
local lock_after = tonumber(ARGV[6])
local lock_time = tonumber(ARGV[7])
local account_after = tonumber(ARGV[8])
local window = tonumber(ARGV[9])
local mode = ARGV[1]

if mode == 'ok' then
    redis.call('HDEL', KEYS[1], 'n:' .. addr, 't:' .. addr, 'lock:' .. addr)
    redis.call('SADD', KEYS[2], addr)
    redis.call('PEXPIRE', KEYS[2], 90 * 24 * 3600 * 1000)
    return '0'
end

if mode == 'fail' then
    local n = redis.call('HINCRBY', KEYS[1], 'n:' .. addr, 1)
    redis.call('HINCRBY', KEYS[1], '*', 1)
    redis.call('HSET', KEYS[1], 't:' .. addr, tostring(now))
    if n >= lock_after then
        redis.call('HSET', KEYS[1], 'lock:' .. addr, tostring(now + lock_time))
    end
    redis.call('PEXPIRE', KEYS[1], math.floor(math.max(window, lock_time) * 1000))
    return '0'
end

local row = redis.call('HMGET', KEYS[1], 'lock:' .. addr, 'n:' .. addr, 't:' .. addr, '*')
local wait = 0
local locked = tonumber(row[1])
if locked and locked > now then
    wait = locked - now
end
local n = tonumber(row[2]) or 0
if n >= free then
    local last = tonumber(row[3]) or now
    local delay = base * 2 ^ math.min(n - free, 20)
    wait = math.max(wait, last + delay - now)
end
local total = tonumber(row[4]) or 0
if total >= account_after and redis.call('SISMEMBER', KEYS[2], addr) == 0 then
    wait = math.max(wait, lock_time)
end
return tostring(math.max(wait, 0))
