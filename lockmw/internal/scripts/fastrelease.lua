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
-- For one lock: KEYS[1] the lock, KEYS[2] Redisson's unlock channel, KEYS[3]
-- the waiter queue, KEYS[4] the request's latch, KEYS[5] the roll-call channel
-- (lib.lua); ARGV[1] field, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL
-- in ms. Returns 1 when released; when release.lua must decide, 3 when
-- waiters are queued or subscribed (contention), 4 when the hold is not as
-- the caller thinks (a re-send whose first copy ran, a loss, a count above 1).
--
-- For n > 1 locks (the batcher's merge of the short releases queued in one
-- pipeline, batchmerge.go): n groups of five keys and of three arguments, in
-- the same order; returns an array of n such replies, where a release that
-- failed (a key of the wrong type) is an error reply of its own and the
-- others still run. Redis charges a script's run once, its calls each: one
-- run for many releases costs the server a fraction of one run each.
local function release(k, a)
  if redis.call('hget', KEYS[k + 1], ARGV[a + 1]) ~= '1' then
    return 4
  end
  if redis.call('exists', KEYS[k + 3]) == 1 then
    return 3
  end
  -- Subscribers of Redisson's channel that are not rlock clients (every rlock
  -- client subscribes to both channels in one command) are Redisson waiters.
  local numsub = 'numsub'
  if ARGV[a + 2] == 'spublish' then numsub = 'shardnumsub' end
  local n = redis.call('pubsub', numsub, KEYS[k + 2], KEYS[k + 5])
  if tonumber(n[2]) > tonumber(n[4]) then
    return 3
  end
  redis.call('del', KEYS[k + 1])
  if tonumber(n[2]) > 0 then
    redis.call(ARGV[a + 2], KEYS[k + 2], '0')
  end
  redis.call('set', KEYS[k + 4], '1', 'px', ARGV[a + 3])
  return 1
end

if #KEYS == 5 then
  return release(0, 0)
end
local out = {}
for i = 0, #KEYS / 5 - 1 do
  local ok, r = pcall(release, i * 5, i * 3)
  if ok or type(r) == 'table' then
    out[i + 1] = r
  else
    out[i + 1] = redis.error_reply(tostring(r))
  end
end
return out
