-- runner_key_create.lua: store a new runner key (its digest only), unless the name is taken.
--
-- KEYS[1]  runner keys, hash: "name:<name>" -> key id, "id:<key id>" -> JSON record
--          {name, digest (SHA-256 hex of the secret part), created_at},
--          "owner:<key id>" -> name (kept after a rotation or revocation)
-- ARGV[1]  name
-- ARGV[2]  key id (16 hex digits)
-- ARGV[3]  the JSON record
--
-- Returns 1 when stored, 0 when the name already has a key (nothing changed).
if redis.call('HEXISTS', KEYS[1], 'name:' .. ARGV[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'name:' .. ARGV[1], ARGV[2], 'id:' .. ARGV[2], ARGV[3],
           'owner:' .. ARGV[2], ARGV[1])
return 1
