-- setmeta stores a hook's metadata with holds that are still ours, so that
-- waiters read it back with their busy reply and hand-off messages carry it.
-- For each hold i: KEYS[2i-1] is the key the watchdog renews (a mutex's
-- hash, a semaphore's permits, a read-write lock's hash), KEYS[2i] the
-- metadata hash of a semaphore or a read-write lock (layout.Keys.Meta; the
-- mutex's own hash again for a mutex), ARGV[3i-2] the kind ('m', 's' or
-- 'r'), ARGV[3i-1] the hold's field (a permit's ID, a side's hash field) and
-- ARGV[3i] the metadata. A mutex keeps it in its hash ("rlock:meta"); the
-- others in the metadata hash under the field, which lives as long as the
-- hold (renewals extend it, the release takes the field out).
local now = nil -- read once, for the first permit
for i = 1, #KEYS / 2 do
  local key, mk = KEYS[2 * i - 1], KEYS[2 * i]
  local kind, field, meta = ARGV[3 * i - 2], ARGV[3 * i - 1], ARGV[3 * i]
  local ttl = 0
  if kind == 'm' then
    if redis.call('hexists', key, field) == 1 then
      redis.call('hset', key, 'rlock:meta', meta)
    end
  elseif kind == 'r' then
    if redis.call('hexists', key, field) == 1 then ttl = redis.call('pttl', key) end
  else
    local score = redis.call('zscore', key, field)
    if score then
      now = now or rlock_now()
      ttl = math.floor(tonumber(score) - now)
    end
  end
  if ttl > 0 then
    redis.call('hset', mk, field, meta)
    if redis.call('pttl', mk) < ttl then redis.call('pexpire', mk, ttl) end
  end
end
return 0
