-- rwleave takes a waiter of a read-write lock out of the queue, as leave.lua
-- (rwlib.lua's layout). What was handed to it meanwhile is kept (ARGV[3]
-- "1": its full TTL) or given up as a release would.
--
-- ARGV[1] hf, ARGV[2] 'publish' or 'spublish', ARGV[3] "1" to keep,
-- ARGV[4] the TTL in ms a kept hold gets, ARGV[5] the fencing counter's TTL
-- in ms, ARGV[6] "1" when a writer takes fencing tokens.
-- Returns {0} when only queued, {1, token} when kept, {2} when given up.
local hf = ARGV[1]
rlock_unqueue(hf)
local n = redis.call('hget', KEYS[1], hf)
if not n then
  return {0}
end
if ARGV[3] == '1' then
  if not rw_renew(KEYS[1], hf, ARGV[4]) then -- a reader handed over too long ago: nothing to keep
    rw_release(hf, tonumber(n), ARGV[2], ARGV[5], rlockReserveWindow)
    return {2}
  end
  return {1, rw_token(hf, ARGV[6], KEYS[5])}
end
rw_release(hf, tonumber(n), ARGV[2], ARGV[5], rlockReserveWindow)
return {2}
