-- Write a finished game's served record: its fields replaced (a review kept by an earlier
-- save stays), its time to live set, and the form stored by earlier versions dropped once
-- converted. One slot: both keys carry the game's hash tag {g:<game_id>}.
--
-- KEYS[1]  the served record ({g:<game_id>}:served), a hash
-- KEYS[2]  the earlier form ({g:<game_id>}:record), deleted when ARGV[2] is "1"
-- ARGV[1]  time to live, ms
-- ARGV[2]  "1": delete KEYS[2]
-- ARGV[3]  "1": the record has no whole-match .mat (the field mat_match is removed)
-- ARGV[4..] field, value, field, value, ...
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
if ARGV[3] == '1' then
    redis.call('HDEL', KEYS[1], 'mat_match')
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
    redis.call('DEL', KEYS[2])
end
return 1
