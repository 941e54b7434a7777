-- semavailable counts a semaphore's free permits (lib.lua's semaphore keys),
-- reclaiming expired ones first as Redisson's availablePermits does; the
-- permits ARGV[2] when it does not exist yet (nothing is written then).
-- ARGV[1] 'publish' or 'spublish', ARGV[3] how long in ms the count outlives
-- its last permit.
local now = rlock_now()
local count = redis.call('get', KEYS[1])
if not count then
  return tonumber(ARGV[2]) - redis.call('zcard', KEYS[5])
end
local expired = redis.call('zrangebyscore', KEYS[5], '0', string.format('%d', now), 'LIMIT', '0', '100')
if #expired > 0 then
  redis.call('zrem', KEYS[5], unpack(expired))
  count = rlock_sem_giveback(ARGV[1], #expired, ARGV[3])
end
return tonumber(count)
