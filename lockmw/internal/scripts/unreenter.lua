-- unreenter undoes a re-entry whose caller got no reply: if it ran, its
-- level is taken back; if it has not run yet, the latch makes sure it never
-- will. KEYS and ARGV as for reenter.
local done = redis.call('get', KEYS[2])
if done == 'x' then return 0 end
if done and redis.call('hexists', KEYS[1], ARGV[1]) == 1 and tonumber(redis.call('hget', KEYS[1], ARGV[1])) > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
end
redis.call('set', KEYS[2], 'x', 'px', ARGV[2])
return 1
