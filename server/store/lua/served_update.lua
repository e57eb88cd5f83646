-- Set fields of a finished game's served record, only while it is kept (a record that
-- expired meanwhile is not made again, without its time-to-live).
--
-- KEYS[1]  the served record ({g:<game_id>}:served), a hash
-- ARGV     field, value, field, value, ...
--
-- Returns 1 when set, 0 when the record is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then
    return 0
end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
