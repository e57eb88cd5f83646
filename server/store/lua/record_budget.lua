-- One finished game against one budget of recorded games (an account's or an address's,
-- over a window that starts with its first game): idempotent by game id.
--
-- KEYS[1]  the budget ({rb:<who>}:recorded), a set of the game ids recorded in the window
-- ARGV[1]  the game id
-- ARGV[2]  the games one window may hold
-- ARGV[3]  the window, milliseconds (the set expires that long after its first game)
-- ARGV[4]  "check" (only look) or "take" (add the game)
--
-- Returns 1 when the game is counted already or fits (and is added by "take"), 0 when the
-- window is full (nothing added).
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
    return 1
end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then
    return 0
end
if ARGV[4] == 'take' then
    redis.call('SADD', KEYS[1], ARGV[1])
    if redis.call('SCARD', KEYS[1]) == 1 then
        redis.call('PEXPIRE', KEYS[1], ARGV[3])
    end
end
return 1
