-- rwlib.lua is prepended, after lib.lua, to the read-write lock's scripts
-- (RWMutex): Redisson's RReadWriteLock layout, rlock's queue and hand-off.
--
-- Keys, as lib.lua's mutex layout: KEYS[1] the hash name, KEYS[2] Redisson's
-- channel redisson_rwlock:{name}, KEYS[3] the queue, KEYS[4] the waiter
-- table, KEYS[5] the fencing counter, KEYS[6] the request's latch, KEYS[7]
-- the hand-off channels' prefix.
--
-- The hash holds Redisson's fields only: "mode" ("read" or "write"), a
-- reader's field "<clientID>:<ownerID>" with its count of levels, the
-- writer's "<clientID>:<ownerID>:write" with its count. Each level n of a
-- reader has the key "{name}:<field>:rwlock_timeout:<n>" (Redisson's; the
-- name alone when it has a brace) with that level's TTL, and the hash's TTL
-- is never shorter than the longest of them. rlock's own state lives beside
-- it: the queue and waiter table (whose "rlock:handoffs" counts the
-- hand-offs in a row, as the semaphore's does) and the fencing counter,
-- whose value is the holding writer's token (only a fenced write takes one).
--
-- A waiter's queue member is the field it will hold: a reader's, or the
-- writer's with ":write". A hand-off tells the owner's field, without it.

-- rw_writer reports whether hf is a writer's field.
local function rw_writer(hf)
  return string.sub(hf, -6) == ':write'
end

-- rw_owner is hf without ":write": the waiter's field, as its client knows it.
local function rw_owner(hf)
  if rw_writer(hf) then return string.sub(hf, 1, -7) end
  return hf
end

-- rw_tkey is the timeout key of level n of the reader field hf in hash.
local function rw_tkey(hash, hf, n)
  local base = hash
  if not string.find(hash, '{', 1, true) then base = '{' .. hash .. '}' end
  return base .. ':' .. hf .. ':rwlock_timeout:' .. n
end

-- rw_extend makes the hash's TTL at least ms (never shorter: other readers'
-- levels may need more).
local function rw_extend(hash, ms)
  if redis.call('pttl', hash) < tonumber(ms) then
    redis.call('pexpire', hash, ms)
  end
end

-- rw_renew gives the hold of hf ttl ms more (a renewal, a claim): a reader's
-- every level key and the hash, a writer's hash, and the holds' metadata
-- hash (setmeta.lua). False when hf holds nothing: no field, or a reader
-- whose level key has expired. Such a reader's field may outlive it in a
-- hash other readers keep (a hold handed over and not claimed within its
-- window, a crashed reader); it holds nothing, as Redisson's unlock walk
-- counts it (rw_longest), and PEXPIRE of its missing key would renew
-- nothing while saying the hold lives.
local function rw_renew(hash, hf, ttl)
  local n = redis.call('hget', hash, hf)
  if not n then return false end
  if not rw_writer(hf) then
    for i = 1, tonumber(n) do
      if redis.call('pexpire', rw_tkey(hash, hf, i), ttl) == 0 then return false end
    end
  end
  rw_extend(hash, ttl)
  rlock_meta_extend(rlock_meta_key(hash), ttl)
  return true
end

-- rw_token is the fencing token of the holding writer hf: the counter's value
-- (only a fenced write takes one, and one writer holds at a time).
local function rw_token(hf, fenced, counter)
  if fenced ~= '1' or not rw_writer(hf) then return 0 end
  return tonumber(redis.call('get', counter) or '0')
end

-- rw_grant gives hf its first level for ttl ms: a writer the free hash (and a
-- token when fenced), a reader a field beside other readers (or the free
-- hash). It returns the token (0 when none).
local function rw_grant(hf, ttl, fenced, tokenTTL)
  if rw_writer(hf) then
    redis.call('hset', KEYS[1], 'mode', 'write', hf, '1')
    redis.call('pexpire', KEYS[1], ttl)
    if fenced == '1' then return rlock_next_token(tokenTTL) end
    return 0
  end
  redis.call('hset', KEYS[1], 'mode', 'read', hf, '1')
  redis.call('set', rw_tkey(KEYS[1], hf, 1), '1', 'px', ttl)
  rw_extend(KEYS[1], ttl)
  return 0
end

-- rw_give grants the waiter hf and tells its client who had it (prev, and
-- meta, its metadata).
local function rw_give(pub, hf, ttl, fenced, prev, tokenTTL, meta)
  local token = rw_grant(hf, ttl, fenced, tokenTTL)
  rlock_tell(pub, rw_owner(hf), token, prev, meta)
end

-- rw_admit_readers lets the readers at the head of the queue in beside the
-- readers that hold (mode read): every live reader queued before the next
-- writer. It returns how many.
local function rw_admit_readers(pub, prev, tokenTTL, meta)
  local n = 0
  local function yes() return true end
  local function reader(f) return not rw_writer(f) end
  while true do
    local f, ttl, fenced = rlock_next_waiter(yes, reader)
    if not f then return n end
    rw_give(pub, f, ttl, fenced, prev, tokenTTL, meta)
    n = n + 1
  end
end

-- rw_writer_ahead reports whether a live writer waits in the queue before
-- hf (anywhere in it when hf is not queued): a reader then waits too, so
-- that no writer starves behind a stream of readers.
local function rw_writer_ahead(hf)
  local stop = '-1'
  local rank = redis.call('zrank', KEYS[3], hf)
  if rank then
    if rank == 0 then return false end
    stop = string.format('%d', rank - 1)
  end
  local now = nil
  for _, f in ipairs(redis.call('zrange', KEYS[3], '0', stop)) do
    if rw_writer(f) then
      local deadline = string.match(redis.call('hget', KEYS[4], f) or '', '^(%d+)|')
      if now == nil then now = rlock_now() end
      if deadline and tonumber(deadline) >= now then return true end
    end
  end
  return false
end

-- rw_handoff frees the hash (it deletes it) and gives it to the head of the
-- queue: a writer alone, or every live reader queued before the next writer
-- at once. When nobody live is queued it publishes Redisson's message msg
-- ("0" after a read release, "1" after a write release). As the mutex's
-- rlock_handoff, it reserves the free lock for Redisson's waiters instead
-- after rlockFairTurns hand-offs in a row (counted in the waiter table) or
-- with nobody queued, while they wait; window nil makes no reservation.
local function rw_handoff(pub, prev, tokenTTL, window, msg, meta)
  local freed = false
  local reserve = false
  local turns = 0
  local function free()
    redis.call('del', KEYS[1], rlock_meta_key(KEYS[1])) -- no hold is left
    freed = true
  end
  local f, ttl, fenced = rlock_next_waiter(function()
    turns = tonumber(redis.call('hget', KEYS[4], 'rlock:handoffs') or '0') + 1
    free()
    reserve = window ~= nil and rlock_reserve_due(pub, turns > rlockFairTurns)
    return not reserve
  end)
  if f then
    rw_give(pub, f, ttl, fenced, prev, tokenTTL, meta)
    if not rw_writer(f) then rw_admit_readers(pub, prev, tokenTTL, meta) end
    if redis.call('exists', KEYS[4]) == 1 then -- more are queued: count this one
      redis.call('hset', KEYS[4], 'rlock:handoffs', string.format('%d', turns))
    end
    return 1
  end
  if not freed then free() end
  if not reserve and window ~= nil then reserve = rlock_reserve_due(pub, true) end
  redis.call(pub, KEYS[2], msg)
  if reserve then rlock_reserve(pub, tonumber(window)) end
  return 0
end

-- rw_longest is Redisson's read unlock's walk: the longest pttl of any
-- reader level's timeout key (-3 when none).
local function rw_longest()
  local longest = -3
  local all = redis.call('hgetall', KEYS[1])
  for i = 1, #all, 2 do
    local n = tonumber(all[i + 1])
    if n and all[i] ~= 'mode' then
      for k = n, 1, -1 do
        longest = math.max(longest, redis.call('pttl', rw_tkey(KEYS[1], all[i], k)))
      end
    end
  end
  return longest
end

-- rw_release takes the hold of hf (n levels) out of the hash. What remains
-- decides the rest, as Redisson's unlocks do: nothing (but the mode) frees
-- the hash and hands it on; a writer that leaves its own read levels turns
-- the mode to read (no message) and lets the queue's head readers in;
-- readers that remain keep the hash, whose TTL becomes the longest of their
-- level keys, and when none of those is alive (crashed readers) it is freed.
local function rw_release(hf, n, pub, tokenTTL, window)
  local writer = rw_writer(hf)
  redis.call('hdel', KEYS[1], hf)
  local meta = rlock_meta_take(rlock_meta_key(KEYS[1]), hf)
  local msg = '1'
  if not writer then
    msg = '0'
    for i = 1, n do redis.call('del', rw_tkey(KEYS[1], hf, i)) end
  end
  if redis.call('hlen', KEYS[1]) > 1 then
    if writer then
      redis.call('hset', KEYS[1], 'mode', 'read')
      rw_admit_readers(pub, rw_owner(hf), tokenTTL, meta)
      return
    end
    if redis.call('hget', KEYS[1], 'mode') == 'write' then return end
    local longest = rw_longest()
    if longest > 0 then
      redis.call('pexpire', KEYS[1], longest)
      return
    end
  end
  rw_handoff(pub, rw_owner(hf), tokenTTL, window, msg, meta)
end
