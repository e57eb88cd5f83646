-- runner_key_rotate.lua: give a runner a new key and kill its old one, in one step. The
-- runner's tournaments are owned by its name, so the new key controls them at once.
--
-- KEYS[1]  runner keys, hash (see runner_key_create.lua; "owner:<key id>" -> name is kept
--          for every key ever issued, so a tournament made before owners were named still
--          finds its runner)
-- ARGV[1]  name
-- ARGV[2]  the new key id (16 hex digits)
-- ARGV[3]  the new key's JSON record
--
-- Returns the old key id when rotated, false when the name has no key (nothing changed).
local old = redis.call('HGET', KEYS[1], 'name:' .. ARGV[1])
if not old then
  return false
end
redis.call('HDEL', KEYS[1], 'id:' .. old)
redis.call('HSET', KEYS[1], 'owner:' .. old, ARGV[1], 'name:' .. ARGV[1], ARGV[2],
           'id:' .. ARGV[2], ARGV[3], 'owner:' .. ARGV[2], ARGV[1])
return old
