-- semrelease gives back a permit (lib.lua's semaphore keys, KEYS[6] the
-- request's latch): to the first live waiter in the queue, else to the
-- count, publishing the count on Redisson's channel.
--
-- ARGV[1] field, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL in ms,
-- ARGV[4] how long in ms the count outlives its last permit, ARGV[5] the
-- window in ms of a reservation for Redisson's waiters (lib.lua's
-- rlock_reserve).
-- Returns 1 when given back, -1 when the field holds no permit (it expired
-- and was reclaimed, or was never ours); a re-sent request that already
-- ran gets its first answer from the latch.
if redis.call('zrem', KEYS[5], ARGV[1]) == 0 then
  local done = redis.call('get', KEYS[6])
  if done then return tonumber(done) end
  return -1
end
rlock_sem_handoff(ARGV[2], ARGV[1], ARGV[5], ARGV[4], rlock_meta_take(rlock_meta_key(KEYS[1]), ARGV[1]))
redis.call('set', KEYS[6], '1', 'px', ARGV[3])
return 1
