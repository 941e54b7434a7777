-- renew extends every lock of a batch whose field is still ours (the
-- watchdog). KEYS are lock names (one hash slot on a cluster); ARGV[1] is the
-- TTL in ms and ARGV[1+i] the field for KEYS[i].
-- Returns one entry per key: 1 renewed, 0 gone or someone else's.
local out = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
