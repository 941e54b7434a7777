-- quorumacquire ends the acquire script of a quorum master (NewQuorum):
-- acquire.lua runs as the function rlock_acquire, unless the acquisitions of
-- this field up to this attempt were ended here (its end latch KEYS[6], see
-- quorumend.lua): a request that arrives after its attempt was undone, or
-- after its hold ended, takes nothing. A win records the attempt number in
-- the hash ("rlock:try"), so that undoing an earlier attempt leaves it.
--
-- The mark: the contender that ranks first of a split vote asks the masters
-- it lacks again with ARGV's last element > 0 (what is left of its keeping
-- grace, in ms); one that finds the lock busy leaves the mark
-- "<field>|<since ms>|<until ms>" in the waiter table KEYS[4] (field
-- "rlock:mark", a quorum never queues), unless another field's mark lives
-- there. While a mark lives, the master refuses every other field: the
-- reply is busy, held by the marked field, for what is left of the mark,
-- with the mark's age as the holder's age and a fourth element 1, so that
-- the refused contender ranks the marked one first of the split and waits
-- for it (quorumsplit.go: a mark ranks its contender, but is no holding).
-- The marked field itself may take the master; its win, or its hold's end
-- or undo (quorumend.lua), removes the mark. A mark only refuses: safety is
-- the acquire script's. A dead contender's mark ends with its grace: the
-- field is read only until its time, and the table expires by then when
-- nothing else keeps it.
--
-- KEYS[1..5] acquire.lua's, KEYS[6] the field's end latch, KEYS[7..8] a
-- read-write lock side's gate (below; absent for a mutex)
-- ARGV acquire.lua's, then the attempt number, then the mark's time in ms (0:
-- none), taken off the end before acquire.lua reads them
--
-- Returns {run_id, acquire.lua's reply}, and when busy the age of the
-- holder's win here in ms (-1: not known) as a third element (and 1 as a
-- fourth when a mark refused the request): the server's
-- run ID tells the client a master that restarted (its data, and so its
-- vote, is new); the age tells a contender of a split vote from an earlier
-- holding (quorumsplit.go). A win records when it was won ("rlock:since").
local markms = tonumber(table.remove(ARGV))
local try = table.remove(ARGV)
local run = string.match(redis.call('info', 'server'), 'run_id:(%x+)') or ''
if tonumber(redis.call('get', KEYS[6]) or '0') >= tonumber(try) then
  return {run, {0, -1, '', ''}}
end
local mark = redis.call('hget', KEYS[4], 'rlock:mark')
local marked, msince, muntil
if mark then
  marked, msince, muntil = string.match(mark, '^(.*)|(%d+)|(%d+)$')
  local now = rlock_now()
  if marked and marked ~= ARGV[2] and tonumber(muntil) > now then
    return {run, {0, tonumber(muntil) - now, marked, '', rlock_now_us()}, now - tonumber(msince), 1}
  end
end
-- The gate of a quorum read-write lock's sides (lockmw/quorumrw.go): with
-- KEYS[7] alone, a writer's, KEYS[7] is the readers' set, whose live members
-- (reader locks whose key exists) refuse it; with KEYS[8] too, a reader's,
-- KEYS[7] is the writer's lock, whose existence refuses it, and KEYS[8] the
-- set it joins; a writer's lock that holds the reader's own field (the
-- writer taking the read side) does not refuse it. Either prunes the set of
-- readers whose key is gone. A refusal is busy, held by the writer's field,
-- or by "rlock:readers", the same on every master, so that the attempt
-- waits as for one holder.
local function gate_holder(key)
  for _, f in ipairs(redis.call('hkeys', key)) do
    if string.sub(f, 1, 6) ~= 'rlock:' then return f end
  end
  return ''
end
local function gate_age(key)
  local since = redis.call('hget', key, 'rlock:since')
  if since then return rlock_now() - tonumber(since) end
  return -1
end
local function gate_prune(set)
  local live = nil
  for _, k in ipairs(redis.call('smembers', set)) do
    local p = redis.call('pttl', k)
    if p == -2 then
      redis.call('srem', set, k)
    elseif live == nil or p < live then
      live = p
    end
  end
  return live
end
if KEYS[8] then
  local p = redis.call('pttl', KEYS[7])
  if p ~= -2 and redis.call('hexists', KEYS[7], ARGV[2]) == 0 then
    return {run, {0, p, gate_holder(KEYS[7]), '', rlock_now_us()}, gate_age(KEYS[7])}
  end
  gate_prune(KEYS[8])
elseif KEYS[7] then
  local live = gate_prune(KEYS[7])
  if live then
    return {run, {0, live, 'rlock:readers', '', rlock_now_us()}, -1}
  end
end
local r = rlock_acquire()
if r[1] == 1 and KEYS[8] then redis.call('sadd', KEYS[8], KEYS[1]) end -- no TTL: pruned, never expired under a live reader
-- Only into a lock that holds the field: a TTL shorter than the script has
-- run deletes the key at once (PEXPIRE of a time already past), and a field
-- written then would make a lock that never expires.
if r[1] == 1 then
  local h = redis.call('hmget', KEYS[1], ARGV[2], 'rlock:try')
  if h[1] and tonumber(h[2] or '0') < tonumber(try) then
    redis.call('hset', KEYS[1], 'rlock:try', try, 'rlock:since', math.floor(rlock_now_us() / 1000))
  end
  if mark then redis.call('hdel', KEYS[4], 'rlock:mark') end
  return {run, r}
end
if markms > 0 then
  local now = rlock_now()
  local from = now
  if marked == ARGV[2] and tonumber(muntil) > now then from = tonumber(msince) end
  local p = redis.call('pttl', KEYS[4])
  redis.call('hset', KEYS[4], 'rlock:mark', ARGV[2] .. '|' .. string.format('%d', from) .. '|' .. string.format('%d', now + markms))
  if p == -2 or (p >= 0 and p < markms) then
    redis.call('pexpire', KEYS[4], string.format('%d', markms))
  end
end
local since = redis.call('hget', KEYS[1], 'rlock:since')
local age = -1
if since and r[5] then age = math.floor(r[5] / 1000) - tonumber(since) end
return {run, r, age}
