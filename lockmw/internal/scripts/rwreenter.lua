-- rwreenter adds one level to the field hf of a read-write lock (KEYS[1]),
-- under the request's latch KEYS[2] (as reenter.lua): a re-entry of either
-- side, or a writer taking the read side (Redisson allows it: hf is then
-- the writer's owner field, a reader's). ARGV[3], the field that must be
-- held, is hf for a re-entry and the writer's field for a writer's first
-- read level. A reader's new level n gets its timeout key, with the TTL of
-- the level below (of the hash for a first level), and the hash at least as
-- much. The TTL is otherwise untouched: a re-entry keeps its hold's regime.
--
-- ARGV[1] hf, ARGV[2] latch TTL in ms, ARGV[3] the field that must be held.
-- Returns {count, ttl ms of the new level's key (0 for a writer)}, {-1} when
-- the hold is gone, {-2} when undone (rwunreenter).
local done = redis.call('get', KEYS[2])
if done then
  if done == 'x' then return {-2} end
  local n, ttl = string.match(done, '^(%d+)|(%d+)$')
  return {tonumber(n), tonumber(ttl)}
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return {-1} end
local n = redis.call('hincrby', KEYS[1], ARGV[1], '1')
local ttl = 0
if not rw_writer(ARGV[1]) then
  ttl = -1
  if n > 1 then ttl = redis.call('pttl', rw_tkey(KEYS[1], ARGV[1], n - 1)) end
  if ttl <= 0 then ttl = redis.call('pttl', KEYS[1]) end
  if ttl <= 0 then ttl = 1 end
  redis.call('set', rw_tkey(KEYS[1], ARGV[1], n), '1', 'px', ttl)
  -- The hash outlives the new key: a server that reads its clock for each
  -- command of a script (Redis 7.0) gives the key ttl from a later instant
  -- than the PTTL it was read with, which a preempted server makes ms.
  rw_extend(KEYS[1], ttl)
end
redis.call('set', KEYS[2], string.format('%d|%d', n, ttl), 'px', ARGV[2])
return {n, ttl}
