-- reenter adds one level to a hold we already have. It never touches the TTL:
-- a re-entry keeps the outer hold's regime (watchdog or lease end).
-- KEYS[1] is the lock, KEYS[2] this request's latch, so that a re-sent
-- request does not count twice and an undone one (see unreenter) not at all.
--
-- ARGV[1] field, ARGV[2] latch TTL in ms
-- Returns the new count, -1 when the hold is gone, -2 when it was undone.
local done = redis.call('get', KEYS[2])
if done then
  if done == 'x' then return -2 end
  return tonumber(done)
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end
local n = redis.call('hincrby', KEYS[1], ARGV[1], 1)
redis.call('set', KEYS[2], n, 'px', ARGV[2])
return n
