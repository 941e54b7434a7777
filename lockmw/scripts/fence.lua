-- fence raises a quorum member's fencing counter to at least ARGV[1], the
-- highest token a quorum acquisition saw, and records it with the hold when
-- this member holds it for ARGV[2]. Since any two majorities share a member,
-- the next acquisition's INCR there gives a greater token.
-- KEYS[1] the lock, KEYS[5] the counter (the layout of lib.lua); ARGV[3] the
-- counter's TTL in ms, which a raised counter gets (as from every token).
local cur = tonumber(redis.call('get', KEYS[5]) or '0')
if cur < tonumber(ARGV[1]) then
  redis.call('set', KEYS[5], ARGV[1], 'px', ARGV[3])
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hset', KEYS[1], 'rlock:token', ARGV[1])
end
return 1
