-- quorumend ends the acquisitions of one field on a quorum master
-- (NewQuorum) up to attempt ARGV[2]: it frees the lock when the field holds
-- it by one of them (the hash's "rlock:try" is not above ARGV[2]) and, when
-- ARGV[4] > 0, raises the field's end latch KEYS[6] to ARGV[2] for ARGV[4] ms,
-- so that an acquire request of those attempts that this master runs later
-- takes nothing (quorumacquire.lua). Requests of one field may run in any
-- order on a master that was slow or paused; with the latch, the outcome is
-- the same in every order.
--
-- KEYS the layout of lib.lua, KEYS[6] the field's end latch
-- ARGV[1] field, ARGV[2] attempt number (a huge one: every attempt, the
-- hold's end), ARGV[3] 'publish' or 'spublish', ARGV[4] the latch's TTL in ms
-- (0: no latch), ARGV[5] "1" to free the lock, ARGV[6] the fencing counter's
-- TTL in ms (for a hand-off), ARGV[7] optional: "1" to free the lock without
-- the unlock message (a quorum never queues: freeing is a DEL), for the
-- partial win of an attempt that lost a split vote, whose rivals must not
-- be woken while the first-ranked contender completes (quorumsplit.go)
-- A mark the field left (quorumacquire.lua) ends here too.
-- Returns 1 when it freed the lock, else 0.
local upto = tonumber(ARGV[2])
local mark = redis.call('hget', KEYS[4], 'rlock:mark')
if mark and string.sub(mark, 1, #ARGV[1] + 1) == ARGV[1] .. '|' then
  redis.call('hdel', KEYS[4], 'rlock:mark')
end
if ARGV[4] ~= '0' and tonumber(redis.call('get', KEYS[6]) or '0') < upto then
  redis.call('set', KEYS[6], ARGV[2], 'px', ARGV[4])
end
if ARGV[5] ~= '1' then return 0 end
local h = redis.call('hmget', KEYS[1], ARGV[1], 'rlock:try')
if h[1] and tonumber(h[2] or '0') <= upto then
  if ARGV[7] == '1' then
    redis.call('del', KEYS[1])
  else
    rlock_handoff(ARGV[3], ARGV[1], ARGV[6])
  end
  return 1
end
return 0
