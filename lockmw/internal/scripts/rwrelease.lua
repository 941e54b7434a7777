-- rwrelease gives up one level of the hold of hf (rwlib.lua's layout), with
-- the request's latch KEYS[6] as release.lua. The last level takes hf out of
-- the hash (rw_release: a hand-off, a downgrade, or readers left). With
-- ARGV[4] > 0 the last level is left to expire in that many ms instead
-- (UnlockAt); a writer whose own read levels remain is released now.
--
-- ARGV[1] hf, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL in ms,
-- ARGV[4] expire-in ms (0: now), ARGV[5] "1" when the caller's last level,
-- ARGV[6] the fencing counter's TTL in ms, ARGV[7] the reservation's window
-- in ms.
-- Returns 0 levels remain, 1 released, 2 left to expire, -1 not held.
local hf = ARGV[1]
local n = tonumber(redis.call('hget', KEYS[1], hf) or '0')
local last = ARGV[5] == '1'
local done = rlock_latched(n)
if done then return done end
local r
if n <= 0 then
  r = '-1'
elseif n > 1 and not last then
  redis.call('hincrby', KEYS[1], hf, '-1')
  if not rw_writer(hf) then redis.call('del', rw_tkey(KEYS[1], hf, n)) end
  r = '0'
elseif ARGV[4] ~= '0' and not rw_writer(hf) then
  for i = 1, n do redis.call('pexpire', rw_tkey(KEYS[1], hf, i), ARGV[4]) end
  if redis.call('hlen', KEYS[1]) == 2 then -- the only holder: the hash goes with it
    redis.call('pexpire', KEYS[1], ARGV[4])
  else
    rw_extend(KEYS[1], ARGV[4])
  end
  r = '2'
elseif ARGV[4] ~= '0' and redis.call('hlen', KEYS[1]) == 2 then
  redis.call('pexpire', KEYS[1], ARGV[4])
  r = '2'
else
  rw_release(hf, n, ARGV[2], ARGV[6], ARGV[7])
  r = '1'
end
redis.call('set', KEYS[6], r, 'px', ARGV[3])
return tonumber(r)
