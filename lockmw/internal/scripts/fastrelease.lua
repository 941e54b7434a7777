-- fastrelease is the release of an uncontended lock: the caller's last level,
-- a count of 1 in Redis, nobody queued and no Redisson waiter subscribed. It
-- does what release.lua does then (delete the lock, publish Redisson's "0",
-- set the request's latch to 1) with fewer keys, arguments and commands, for
-- Redis charges a script for each. The "0" is published only when the
-- channel has a subscriber on this server: nobody else can hear it (Redisson
-- and rlock subscribe where the lock's slot is served, the way the NUMSUB
-- below already counts Redisson's waiters). In any other case it changes
-- nothing and the caller then runs release.lua with the same latch, which
-- answers a re-send of this script that already ran (the field is gone, the
-- latch says 1) and reserves the lock for a Redisson waiter.
--
-- KEYS[1] the latch, then four keys for each of the n locks, grouped by
-- kind: the n locks, their n Redisson unlock channels, their n waiter
-- queues, their n roll-call channels (lib.lua), so that a command over
-- every lock takes a range of KEYS as it is; ARGV[1] 'publish' or
-- 'spublish', ARGV[2] the latch TTL in ms, then each lock's field. Returns
-- 1 when released; when release.lua must decide, 3 when waiters are queued
-- or subscribed (contention), 4 when the hold is not as the caller thinks
-- (a re-send whose first copy ran, a loss, a count above 1).
--
-- One lock (n = 1): KEYS[1] is the request's own latch, set to 1 when the
-- lock is freed; a re-send finds the field gone and answers 4, and
-- release.lua answers it from the latch.
--
-- n > 1 locks (the batcher's merge of the short releases queued in one
-- pipeline, batchmerge.go): returns an array of n such replies, where a
-- release that failed (a key of the wrong type) is an error reply of its
-- own and the others still run (the HGET that finds it is a redis.pcall:
-- one loop, no closure or pcall). Redis charges a script's run once and its
-- calls each, so the queues are looked at with one EXISTS, the subscribers
-- counted with one NUMSUB (a second for the few channels that have any),
-- the locks deleted with one DEL and the latch set with one SET for all n:
-- what is left per lock is its HGET. KEYS[1] is then
-- the run's latch: a string of n characters, the i-th "1" when the i-th
-- lock was freed (each caller knows its run's latch and its place, for
-- release.lua). A re-sent run reads it first and answers 1 for the locks it
-- freed. (Within a script the order of the writes is not seen: the "0"s
-- reach their subscribers after it ends.)
local n = (#KEYS - 1) / 4
local prior -- the run's latch, when a copy of the run ran before
if n > 1 then prior = redis.call('get', KEYS[1]) end
local queued = redis.call('exists', unpack(KEYS, 2 * n + 2, 3 * n + 1))
local numsub = 'numsub'
if ARGV[1] == 'spublish' then numsub = 'shardnumsub' end
-- {channel, subscribers, ...} of Redisson's channels; where a channel has
-- any, its roll-call channel's are counted too (rlocks[i]): subscribers of
-- Redisson's channel that are not rlock clients (every rlock client
-- subscribes to both channels in one command) are Redisson waiters. Most
-- channels have none, and each channel counted costs the script a string.
local subs = redis.call('pubsub', numsub, unpack(KEYS, n + 2, 2 * n + 1))
local heard, rlocks = {}, {}
for i = 1, n do
  if subs[2 * i] > 0 then heard[#heard + 1] = i end
end
if #heard > 0 then
  local calls = {}
  for j, i in ipairs(heard) do calls[j] = KEYS[3 * n + 1 + i] end
  local counts = redis.call('pubsub', numsub, unpack(calls))
  for j, i in ipairs(heard) do rlocks[i] = counts[2 * j] end
end
local out, marks, freed = {}, {}, 0
for i = 1, n do
  local r
  if prior and string.sub(prior, i, i) == '1' then
    marks[i], r = 'r', 1 -- a re-sent run: its first copy freed this one
  else
    marks[i] = '0'
    local v = redis.pcall('hget', KEYS[1 + i], ARGV[2 + i])
    local redisson = subs[2 * i]
    if v ~= '1' then
      r = 4
      if type(v) == 'table' then r = v end -- a key of the wrong type: its error, the others go on
    elseif queued > 0 and redis.call('exists', KEYS[2 * n + 1 + i]) == 1 then
      r = 3
    elseif redisson > 0 and redisson > rlocks[i] then
      r = 3
    else
      marks[i], r = '1', 1
      freed = freed + 1
      if redisson > 0 then redis.call(ARGV[1], KEYS[n + 1 + i], '0') end
    end
  end
  out[i] = r
end
if freed > 0 then
  if freed == n then
    redis.call('del', unpack(KEYS, 2, n + 1))
  else
    local keys = {}
    for i = 1, n do
      if marks[i] == '1' then keys[#keys + 1] = KEYS[1 + i] end
    end
    redis.call('del', unpack(keys))
  end
  local latch = table.concat(marks)
  if prior then latch = string.gsub(latch, 'r', '1') end
  redis.call('set', KEYS[1], latch, 'px', ARGV[2])
end
if n == 1 then return out[1] end
return out
