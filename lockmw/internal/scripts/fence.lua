-- fence gives a quorum acquisition its fencing token: when this master's
-- counter is at most ARGV[1] (the largest token the acquisition saw), it
-- sets it to ARGV[1] + 1, the token, and records the token with the hold
-- when this master holds it for ARGV[2]; a counter above ARGV[1] is left
-- alone. The acquisition's token counts once a majority took it: any two
-- majorities share a master, and the next fenced acquisition runs this after
-- it won, so it finds the token there and takes a greater one (see quorum's
-- fence).
-- KEYS[1] the lock, KEYS[5] the counter (the layout of lib.lua); ARGV[3] the
-- counter's TTL in ms, which a raised counter gets (as from every token).
-- Returns the counter as it was (0 when absent).
local cur = tonumber(redis.call('get', KEYS[5]) or '0')
local seen = tonumber(ARGV[1])
if cur > seen then return cur end
local token = string.format('%d', seen + 1)
redis.call('set', KEYS[5], token, 'px', ARGV[3])
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hset', KEYS[1], 'rlock:token', token)
end
return cur
