-- rwunreenter undoes a re-entry of a read-write lock whose caller got no
-- reply (as unreenter.lua): if it ran (its latch holds the count n it made),
-- one level is taken back while the field has at least n, the field going
-- when none is left; if it has not run, the latch makes sure it never will.
-- KEYS and ARGV[1], ARGV[2] as for rwreenter.
local done = redis.call('get', KEYS[2])
if done == 'x' then return 0 end
redis.call('set', KEYS[2], 'x', 'px', ARGV[2])
if not done then return 1 end
local n = tonumber(string.match(done, '^(%d+)|'))
local cur = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
if cur < n then return 1 end
if cur == 1 then
  redis.call('hdel', KEYS[1], ARGV[1])
else
  redis.call('hincrby', KEYS[1], ARGV[1], '-1')
end
if not rw_writer(ARGV[1]) then redis.call('del', rw_tkey(KEYS[1], ARGV[1], cur)) end
if redis.call('hlen', KEYS[1]) == 1 then redis.call('del', KEYS[1]) end
return 1
