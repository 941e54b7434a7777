-- quorumacquire ends the acquire script of a quorum master (NewQuorum):
-- acquire.lua runs as the function rlock_acquire, unless the acquisitions of
-- this field up to this attempt were ended here (its end latch KEYS[6], see
-- quorumend.lua): a request that arrives after its attempt was undone, or
-- after its hold ended, takes nothing. A win records the attempt number in
-- the hash ("rlock:try"), so that undoing an earlier attempt leaves it.
--
-- KEYS[1..5] acquire.lua's, KEYS[6] the field's end latch
-- ARGV acquire.lua's, then the attempt number, taken off the end before
-- acquire.lua reads them
--
-- Returns {run_id, acquire.lua's reply}, and when busy the age of the
-- holder's win here in ms (-1: not known) as a third element: the server's
-- run ID tells the client a master that restarted (its data, and so its
-- vote, is new); the age tells a contender of a split vote from an earlier
-- holding (quorumsplit.go). A win records when it was won ("rlock:since").
local try = table.remove(ARGV)
local run = string.match(redis.call('info', 'server'), 'run_id:(%x+)') or ''
if tonumber(redis.call('get', KEYS[6]) or '0') >= tonumber(try) then
  return {run, {0, -1, '', ''}}
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
  return {run, r}
end
local since = redis.call('hget', KEYS[1], 'rlock:since')
local age = -1
if since and r[5] then age = math.floor(r[5] / 1000) - tonumber(since) end
return {run, r, age}
