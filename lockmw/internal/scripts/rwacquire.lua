-- rwacquire takes a first level of a read-write lock for a new owner
-- (rwlib.lua's layout): hf is the field it will hold, a reader's or a
-- writer's (":write"). A writer takes a free lock; a reader a free lock or
-- one in read mode, unless a live writer waits in the queue before it
-- (rw_writer_ahead: no writer starves behind readers). Idempotent as
-- acquire.lua: finding hf means a re-send already won or the lock was handed
-- over; it is claimed then (its full TTL).
--
-- ARGV[1] ttl in ms, ARGV[2] hf, ARGV[3] "1" to join the queue when busy,
-- ARGV[4] grace in ms of a queue entry, ARGV[5] "1" when a writer takes
-- fencing tokens, ARGV[6] "1" when an earlier attempt may have queued hf,
-- ARGV[7] the claim window in ms, ARGV[8] the fencing counter's TTL in ms,
-- ARGV[9] the generation of a reservation this client saw used, or ''.
--
-- Returns {1, token} or {0, pttl, holder field, its metadata, server µs,
-- the holders' metadata (at most rlockMaxHolderMetas)}, as acquire.lua.
local hf = ARGV[2]
local function won(token)
  rlock_dequeue(hf, ARGV[6])
  return {1, token}
end

local all = redis.call('hgetall', KEYS[1])
local mode = nil
local mine = false
local holder = ''
local holders = {}
for i = 1, #all, 2 do
  local f = all[i]
  if f == 'mode' then
    mode = all[i + 1]
  elseif f == hf then
    mine = true
  else
    if #holders < 64 then holders[#holders + 1] = f end
    if holder == '' or rw_writer(f) then holder = f end
  end
end
-- A reader's field whose level key expired (rw_renew) holds nothing: the
-- attempt goes on as a new one, which grants it a fresh level.
if mine and rw_renew(KEYS[1], hf, ARGV[1]) then
  return won(rw_token(hf, ARGV[5], KEYS[5]))
end

local free = mode == nil
local gen = ARGV[9]
if gen == '' then gen = nil end
local yield = 0
if gen or (free and (ARGV[3] == '1' or ARGV[6] == '1')) then
  yield = rlock_reservation(gen, free)
  if not free then yield = 0 end
end
if (free and yield <= 0) or (mode == 'read' and not rw_writer(hf) and not rw_writer_ahead(hf)) then
  return won(rw_grant(hf, ARGV[1], ARGV[5], ARGV[8]))
end

local pttl = yield
if pttl <= 0 then pttl = redis.call('pttl', KEYS[1]) end
if ARGV[3] == '1' then
  rlock_enqueue(hf, pttl, ARGV[4], ARGV[1], ARGV[5], ARGV[7], ARGV[6])
end
local mk = rlock_meta_key(KEYS[1])
return {0, pttl, holder, redis.call('hget', mk, holder) or '', rlock_now_us(), rlock_metas(mk, holders)}
