-- runner_key_revoke.lua: forget a runner key by its name (both fields, at once). Its
-- "owner:<key id>" field stays: the name still owns its tournaments, and a key made later
-- for the same name controls them.
--
-- KEYS[1]  runner keys, hash (see runner_key_create.lua)
-- ARGV[1]  name
--
-- Returns 1 when a key was revoked, 0 when the name has none.
local id = redis.call('HGET', KEYS[1], 'name:' .. ARGV[1])
if not id then
  return 0
end
redis.call('HDEL', KEYS[1], 'name:' .. ARGV[1], 'id:' .. id)
redis.call('HSET', KEYS[1], 'owner:' .. id, ARGV[1])
return 1
