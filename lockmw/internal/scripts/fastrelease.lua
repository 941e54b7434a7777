-- fastrelease is the release of an uncontended lock: the caller's last level,
-- a count of 1 in Redis, nobody queued and no Redisson waiter subscribed. It
-- does what release.lua does then (delete the lock, publish Redisson's "0",
-- set the request's latch to 1) with fewer keys, arguments and commands, for
-- Redis charges a script for each. The "0" is published only when the
-- channel has a subscriber on this server: nobody else can hear it (Redisson
-- and rlock subscribe where the lock's slot is served, the way the NUMSUB
-- below already counts Redisson's waiters). In any other case it changes
-- nothing and the caller then runs release.lua with the same latch, which
-- answers a re-send of this script that already ran (the field is gone, the
-- latch says 1) and reserves the lock for a Redisson waiter.
--
-- KEYS[1] the lock, KEYS[2] Redisson's unlock channel, KEYS[3] the waiter
-- queue, KEYS[4] the request's latch, KEYS[5] the roll-call channel (lib.lua);
-- ARGV[1] field, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL in ms.
-- Returns 1 when released; when release.lua must decide, 3 when waiters are
-- queued or subscribed (contention), 4 when the hold is not as the caller
-- thinks (a re-send whose first copy ran, a loss, a count above 1).
if redis.call('hget', KEYS[1], ARGV[1]) ~= '1' then
  return 4
end
if redis.call('exists', KEYS[3]) == 1 then
  return 3
end
-- Subscribers of Redisson's channel that are not rlock clients (every rlock
-- client subscribes to both channels in one command) are Redisson waiters.
local numsub = 'numsub'
if ARGV[2] == 'spublish' then numsub = 'shardnumsub' end
local n = redis.call('pubsub', numsub, KEYS[2], KEYS[5])
if tonumber(n[2]) > tonumber(n[4]) then
  return 3
end
redis.call('del', KEYS[1])
if tonumber(n[2]) > 0 then
  redis.call(ARGV[2], KEYS[2], '0')
end
redis.call('set', KEYS[4], '1', 'px', ARGV[3])
return 1
