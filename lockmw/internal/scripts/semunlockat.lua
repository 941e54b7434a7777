-- semunlockat gives a permit up at a later time (Semaphore.UnlockAt): its
-- expiry becomes ARGV[2] ms from now, after which anyone's next attempt
-- reclaims it. KEYS[1] the permits' sorted set, ARGV[1] the field.
-- Returns 2 when set, -1 when the field holds no permit.
if not redis.call('zscore', KEYS[1], ARGV[1]) then
  return -1
end
redis.call('zadd', KEYS[1], 'XX', string.format('%d', rlock_now() + tonumber(ARGV[2])), ARGV[1])
return 2
