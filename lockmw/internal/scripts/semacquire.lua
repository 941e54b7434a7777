-- semacquire takes a permit of a semaphore for a new owner (lib.lua's
-- semaphore keys), as Redisson's RPermitExpirableSemaphore does: expired
-- permits are reclaimed first, then a free one is taken (the count goes
-- down, the field goes into the permits' sorted set with its expiry). A
-- busy caller that may wait joins the queue. It is idempotent: finding our
-- field means a re-sent request already won, or a permit was handed to us
-- while we were queued.
--
-- ARGV[1] TTL in ms (lease, or the watchdog timeout), ARGV[2] field,
-- ARGV[3] "1" to join the queue when busy, ARGV[4] grace in ms of a queue
-- entry past the earliest permit's expiry, ARGV[5] the permits (the count
-- when the semaphore does not exist yet: the first setting wins, as
-- Redisson's trySetPermits), ARGV[6] "1" when an earlier attempt may have
-- queued this owner, ARGV[7] its claim window in ms, ARGV[8] 'publish' or
-- 'spublish', ARGV[9] how long in ms the count outlives its last permit,
-- ARGV[10] optional: "<generation>|<n>", the client saw n counts published
-- after a reservation's generation (lib.lua's rlock_reservation).
--
-- Returns {1, 0} when we hold a permit (this request set its expiry),
--         {0, pttl, holder, its metadata, now µs, metas} when none is free:
--         pttl the earliest permit's time left (-1: none expires), holder its
--         field when an rlock one, now the server's time in µs (as
--         acquire.lua's busy reply), metas the metadata of the permits that
--         expire first (at most rlockMaxHolderMetas);
--         while a reservation for Redisson's waiters keeps the last free
--         permit from a caller that would wait, pttl is what is left of its
--         window and there is no holder.
local now = rlock_now()
local count = redis.call('get', KEYS[1])

-- The reservation for Redisson's waiters, read against the count before
-- anything here changes it: yield > 0 while it is on.
local yield = 0
if count then
  yield = rlock_reservation(ARGV[10], tonumber(count) >= 1, tonumber(count))
end

-- Permits whose expiry passed (a crashed holder's, a lease's end) come back.
local expired = redis.call('zrangebyscore', KEYS[5], '0', string.format('%d', now), 'LIMIT', '0', '100')
local mk = rlock_meta_key(KEYS[1])
if #expired > 0 then
  redis.call('zrem', KEYS[5], unpack(expired))
  redis.call('hdel', mk, unpack(expired))
  if count then
    count = rlock_sem_giveback(ARGV[8], #expired, ARGV[9])
  end
end
if not count then
  count = tonumber(ARGV[5]) - redis.call('zcard', KEYS[5])
  redis.call('set', KEYS[1], count)
end
count = tonumber(count)

local function won()
  rlock_dequeue(ARGV[2], ARGV[6])
  return {1, 0}
end

local expiry = string.format('%d', now + tonumber(ARGV[1]))
if redis.call('zscore', KEYS[5], ARGV[2]) then
  -- A re-send, or a hand-off whose message we missed: claim it (full TTL).
  redis.call('zadd', KEYS[5], expiry, ARGV[2])
  return won()
end

-- While a reservation is on, a caller that would wait leaves the last free
-- permit to Redisson's threads; a permit taken is counted in it.
local waits = ARGV[3] == '1' or ARGV[6] == '1'
if count >= 1 and (yield <= 0 or count >= 2 or not waits) then
  if yield > 0 then rlock_sem_took() end
  redis.call('decr', KEYS[1])
  redis.call('persist', KEYS[1])
  redis.call('zadd', KEYS[5], expiry, ARGV[2])
  return won()
end

local pttl = -1
local holder = ''
local first = redis.call('zrange', KEYS[5], '0', string.format('%d', rlockMaxHolderMetas - 1), 'WITHSCORES')
local metas = {}
if first[1] then
  if string.match(first[1], '^[^|]+:%d+$') then holder = first[1] end
  local score = tonumber(first[2])
  if score < rlockNoLease then pttl = math.max(score - now, 0) end
  local fields = {}
  for i = 1, #first, 2 do fields[#fields + 1] = first[i] end
  metas = rlock_metas(mk, fields)
end
local meta = redis.call('hget', mk, holder) or ''
if yield > 0 and count >= 1 then pttl, holder, meta, metas = yield, '', '', {} end
if ARGV[3] == '1' then
  rlock_enqueue(ARGV[2], pttl, ARGV[4], ARGV[1], '0', ARGV[7], ARGV[6])
end
return {0, pttl, holder, meta, rlock_now_us(), metas}
