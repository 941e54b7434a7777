-- acquire takes the lock for a new owner, Redisson 4.x style: when the hash is
-- absent (or already has our field) set the field and the TTL; otherwise
-- report the holder. It is idempotent: our field is unique to this one
-- acquisition, so finding it means a re-sent request already won, or the lock
-- was handed to us while we were queued; then nothing is counted twice.
--
-- ARGV[1] ttl in ms (lease, or the watchdog timeout)
-- ARGV[2] field "<clientID>:<ownerID>"
-- ARGV[3] "1" to join the waiter queue when busy
-- ARGV[4] grace in ms that a queued waiter's entry outlives the holder's TTL
-- ARGV[5] "1" when the mutex hands out fencing tokens
-- ARGV[6] "1" when this owner may be queued (an earlier attempt joined the queue)
-- ARGV[7] how long, in ms, a hand-off waits for this waiter to claim the lock
-- ARGV[8] the fencing counter's TTL in ms (may be '' when not fenced)
-- ARGV[9] optional: the generation of a reservation this client saw used
--         (the lock taken and freed again after it: lib.lua's rlock_reserve)
--
-- Returns {1, token} when we hold the lock (this very request set its TTL),
--         {0, pttl, holder field, holder metadata, server µs} when it is busy
--         (or left reserved for Redisson's waiters: then pttl is what is left
--         of the reservation's window, and there is no holder); the server's
--         time tells the waiter which hand-offs came before this reply.
local function won(token)
  rlock_dequeue(ARGV[2], ARGV[6])
  return {1, token}
end

-- One HGETALL tells whether the lock is free, whether it is ours and who
-- holds it (every redis.call costs the server a command).
local fields = redis.call('hgetall', KEYS[1])
local free = #fields == 0

-- A caller that would wait leaves a lock reserved for Redisson's waiters
-- (lib.lua's rlock_reserve) alone until the reservation is used or its
-- window passes: it is told the lock is busy for what is left of the window.
-- A caller whose client saw the reservation used says so, free or not.
local yield = 0
if ARGV[9] or (free and (ARGV[3] == '1' or ARGV[6] == '1')) then
  yield = rlock_reservation(ARGV[9], free)
  if not free then yield = 0 end
end
if free and yield <= 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], '1')
  redis.call('pexpire', KEYS[1], ARGV[1])
  local token = 0
  if ARGV[5] == '1' then
    token = rlock_next_token(ARGV[8])
    redis.call('hset', KEYS[1], 'rlock:token', token)
  end
  return won(token)
end

local mine = false
local token = '0'
local holder = ''
local meta = ''
for i = 1, #fields, 2 do
  local f = fields[i]
  if f == ARGV[2] then
    mine = true
  elseif f == 'rlock:token' then
    token = fields[i + 1]
  elseif f == 'rlock:meta' then
    meta = fields[i + 1]
  elseif string.sub(f, 1, 6) ~= 'rlock:' then
    holder = f
  end
end
if mine then
  -- A re-send, or a hand-off whose message we missed: claim it (full TTL).
  redis.call('pexpire', KEYS[1], ARGV[1])
  return won(tonumber(token))
end

local pttl = yield
if pttl <= 0 then pttl = redis.call('pttl', KEYS[1]) end

if ARGV[3] == '1' then
  rlock_enqueue(ARGV[2], pttl, ARGV[4], ARGV[1], ARGV[5], ARGV[7], ARGV[6])
end
return {0, pttl, holder, meta, rlock_now_us()}
