-- leave takes a waiter that stops waiting out of the queue. If the lock was
-- handed to it in the meantime, it either keeps it (ARGV[3] = "1", the wait
-- ran out just as the turn came) or passes it on to the next waiter.
--
-- ARGV[1] field, ARGV[2] 'publish' or 'spublish', ARGV[3] "1" to keep a hand-off,
-- ARGV[4] the TTL in ms a kept lock gets, ARGV[5] the fencing counter's TTL
-- in ms (for a hand-off)
-- Returns {0} when it was only queued, {1, token} when it keeps the lock,
-- {2} when it passed the lock on.
rlock_unqueue(ARGV[1])
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return {0}
end
if ARGV[3] == '1' then
  redis.call('pexpire', KEYS[1], ARGV[4]) -- claim it: its full TTL
  return {1, tonumber(redis.call('hget', KEYS[1], 'rlock:token') or '0')}
end
rlock_handoff(ARGV[2], ARGV[1], ARGV[5], nil, nil, rlockReserveWindow)
return {2}
