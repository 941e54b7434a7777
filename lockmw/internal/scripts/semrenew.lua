-- semrenew extends every permit of a batch that is still ours and not
-- expired (the watchdog, and the claim of a permit handed over). KEYS are
-- the semaphores' permit sets (one hash slot on a cluster); ARGV[1] is the
-- TTL in ms and ARGV[1+i] the field for KEYS[i]. An expired permit may have
-- been reclaimed by then, or may be by anyone's next attempt: it is lost.
-- The holds' metadata hashes (setmeta.lua) live as long.
-- Returns one entry per key: 1 renewed, 0 gone or expired.
local now = rlock_now()
local expiry = string.format('%d', now + tonumber(ARGV[1]))
local out = {}
for i = 1, #KEYS do
  local score = redis.call('zscore', KEYS[i], ARGV[i + 1])
  if score and tonumber(score) > now then
    redis.call('zadd', KEYS[i], 'XX', expiry, ARGV[i + 1])
    rlock_meta_extend(rlock_meta_key(string.sub(KEYS[i], 1, -9)), ARGV[1]) -- KEYS[i] is "<name>:timeout"
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
