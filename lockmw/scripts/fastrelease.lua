-- fastrelease is the release of a hold's last level when, as far as its
-- client knows, nobody waits for the lock: Redisson's unlock with its latch,
-- for the hold's last level (so the count is not looked at), with as few
-- keys and arguments as it needs. When the lock hash says rlock waiters may
-- be queued (rlock:q), it changes nothing and returns 3: the client then runs
-- the full release, which hands the lock over.
--
-- KEYS[1] the lock, KEYS[2] Redisson's unlock channel, KEYS[3] this
-- request's latch.
-- ARGV[1] field, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL in ms
-- Returns 1 when released, -1 when the field is not in the lock (gone, or
-- someone else's), 3 when waiters may be queued.
local v = redis.call('hmget', KEYS[1], ARGV[1], 'rlock:q')
if not v[1] then
  -- Not ours, or a re-send of a release that already ran: its latch knows.
  local done = redis.call('get', KEYS[3])
  if done then return tonumber(done) end
  redis.call('set', KEYS[3], '-1', 'px', ARGV[3])
  return -1
end
if v[2] then return 3 end
redis.call('del', KEYS[1])
redis.call(ARGV[2], KEYS[2], '0')
redis.call('set', KEYS[3], '1', 'px', ARGV[3])
return 1
