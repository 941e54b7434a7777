-- claim takes over a lock handed to a waiter: it gives the lock the waiter's
-- full TTL (the hand-off gave only a short claim window).
-- KEYS[1] the lock; ARGV[1] field, ARGV[2] TTL in ms.
-- Returns {1, token} when the lock is ours, {0} when the window passed and
-- it is gone or someone else's.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return {0}
end
redis.call('pexpire', KEYS[1], ARGV[2])
return {1, tonumber(redis.call('hget', KEYS[1], 'rlock:token') or '0')}
