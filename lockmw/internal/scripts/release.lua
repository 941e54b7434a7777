-- release gives up one level of a hold (Redisson's unlock, with its
-- short-lived latch so that a re-sent request does not count twice). The last
-- level deletes the lock and hands it to the first queued waiter, or
-- publishes Redisson's "0" when nobody is queued. With ARGV[4] > 0 the last
-- level instead keeps the key and lets it expire in that many ms (UnlockAt).
--
-- ARGV[1] field, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL in ms,
-- ARGV[4] expire-in ms for the last level (0: release now),
-- ARGV[5] "1" when the caller knows this is its last level whatever the count
-- (its local count says so; a quorum client's members may differ after a
-- partial failure), ARGV[6] the fencing counter's TTL in ms (for a hand-off),
-- ARGV[7] the window in ms of a reservation for Redisson's waiters (lib.lua's
-- rlock_reserve); KEYS[8] and ARGV[8], when given: the latch of a merged
-- run of fastrelease.lua that carried this level's short release, and its
-- place in the run (batchmerge.go): a "1" there says the run freed it.
-- Returns 0 when levels remain, 1 when released, 2 when left to expire,
-- -1 when the field is not in the lock (gone, or someone else's).
-- One HMGET reads what the hand-off needs too.
local h = redis.call('hmget', KEYS[1], ARGV[1], 'rlock:meta', 'rlock:handoffs')
local n = tonumber(h[1] or '0')
local last = ARGV[5] == '1'
local done = rlock_latched(n)
if not done and n <= 0 and KEYS[8] then
  local at = tonumber(ARGV[8])
  if string.sub(redis.call('get', KEYS[8]) or '', at, at) == '1' then done = 1 end
end
if done then return done end
local r
if n <= 0 then
  r = '-1'
elseif n > 1 and not last then
  redis.call('hincrby', KEYS[1], ARGV[1], '-1')
  r = '0'
elseif ARGV[4] ~= '0' then
  redis.call('pexpire', KEYS[1], ARGV[4])
  r = '2'
else
  rlock_handoff(ARGV[2], ARGV[1], ARGV[6], h[2] or '', h[3] or '0', ARGV[7])
  r = '1'
end
redis.call('set', KEYS[6], r, 'px', ARGV[3])
return tonumber(r)
