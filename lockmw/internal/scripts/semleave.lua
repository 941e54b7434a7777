-- semleave takes a waiter that stops waiting out of a semaphore's queue
-- (lib.lua's semaphore keys). If a permit was handed to it meanwhile, it
-- keeps it (ARGV[3] = "1", the wait ran out just as its turn came) or passes
-- it on.
--
-- ARGV[1] field, ARGV[2] 'publish' or 'spublish', ARGV[3] "1" to keep a
-- hand-off, ARGV[4] the TTL in ms a kept permit gets, ARGV[5] how long in ms
-- the count outlives its last permit.
-- Returns {0} when it was only queued, {1, 0} when it keeps a permit, {2}
-- when it passed one on.
rlock_unqueue(ARGV[1])
if redis.call('zscore', KEYS[5], ARGV[1]) == false then
  return {0}
end
if ARGV[3] == '1' then
  redis.call('zadd', KEYS[5], string.format('%d', rlock_now() + tonumber(ARGV[4])), ARGV[1])
  return {1, 0}
end
redis.call('zrem', KEYS[5], ARGV[1])
rlock_sem_handoff(ARGV[2], ARGV[1], rlockReserveWindow, ARGV[5])
return {2}
