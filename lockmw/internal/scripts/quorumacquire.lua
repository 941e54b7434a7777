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
-- KEYS[1..5] acquire.lua's, KEYS[6] the field's end latch
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
local r = rlock_acquire()
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
