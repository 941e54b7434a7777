-- lib.lua is prepended to every other script of rlock. It holds the pieces that
-- more than one script needs: the server clock and the hand-off of a freed lock.
--
-- Key layout (every key shares the lock name's hash slot):
--   KEYS[1] the lock: a hash, field "<clientID>:<ownerID>" -> reentrancy count
--           (Redisson's layout); rlock adds the optional fields "rlock:token"
--           (fencing token of the hold), "rlock:meta" (a hook's metadata)
--           and "rlock:handoffs" (how many hand-offs in a row led to it).
--   KEYS[2] Redisson's unlock channel; "0" is published there when the lock
--           becomes free and is not handed to a queued rlock waiter.
--   KEYS[3] the waiter queue: a sorted set, member = waiter field, score = arrival.
--   KEYS[4] the waiter table: a hash, waiter field -> "deadline|ttl|fenced|claim",
--           plus the arrival counter "rlock:seq" and the reservation for
--           Redisson's waiters: "rlock:open" (until when, in the server's ms,
--           it lasts at most), "rlock:opengen" ("<generation>|<window ms>")
--           and "rlock:quiet" ("<until when>|<generation>": no reservation is
--           made until then, after one that no Redisson waiter used in its
--           window); a semaphore's reservation adds "rlock:openbase" (see
--           rlock_reservation). See rlock_reserve.
--   KEYS[5] the fencing counter (Redisson's "redisson_lock_token:{name}"); it
--           expires after the counter TTL its scripts pass (a day by default),
--           refreshed by every token (see rlock_next_token).
--   KEYS[6] an idempotency latch for this one request.
--   KEYS[7] the prefix of the hand-off channels, one per client: ":<clientID>"
--           appended; "<field>|<token>|<previous holder>|<server µs>|<its
--           metadata>" tells one waiter of that client it holds the lock, who
--           held it before, and when (the server's clock, in µs).
--           The prefix itself is the roll-call channel: every rlock client
--           subscribed to KEYS[2] is subscribed to it too, in the same command;
--           a release that reserves the lock publishes the reservation's
--           generation there, just after its "0" on KEYS[2].

-- rlock_now_us is the server's time in µs: it orders the hand-offs and busy
-- replies of one name (two scripts never run in the same µs), and starts
-- fencing counters and reservation generations.
local function rlock_now_us()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- rlock_now is the server's time in ms.
local function rlock_now()
  return math.floor(rlock_now_us() / 1000)
end

-- Numbers passed to redis.call are written as string literals ('1', not 1):
-- Redis formats a Lua number with snprintf, a few thousand instructions each.

-- rlock_next_token takes the next fencing token from the counter KEYS[5] and
-- keeps the counter ttl ms from now (so that a name's counter does not
-- outlive its use by more than that). A counter that does not exist (never
-- used, or expired) starts from the server's clock in microseconds: a
-- counter lives at least ttl after its last token and hands out tokens one
-- at a time, so as long as it handed out fewer tokens than the microseconds
-- it lived (plus ttl), the new start is above every token the old one gave.
-- See docs/waiting.md, The keys.
local function rlock_next_token(ttl)
  if redis.call('exists', KEYS[5]) == 0 then
    redis.call('set', KEYS[5], string.format('%d', rlock_now_us()))
  end
  local token = redis.call('incr', KEYS[5])
  redis.call('pexpire', KEYS[5], ttl or '86400000')
  return token
end

-- rlock_drop_table deletes the waiter table, whose queue is empty now. A
-- quiet time still running (rlock_reservation) is kept, alone, until it
-- ends; so is a reservation still on (a semaphore's: its other permits are
-- handed over, and taken, meanwhile), until its window ends.
local function rlock_drop_table()
  local r = redis.call('hmget', KEYS[4], 'rlock:quiet', 'rlock:open', 'rlock:opengen', 'rlock:openbase')
  redis.call('del', KEYS[4])
  if not r[1] and not r[2] then return end
  local now = rlock_now()
  local keep = 0
  local left = tonumber(string.match(r[1] or '', '^%d+') or '0') - now
  if left > 0 then
    redis.call('hset', KEYS[4], 'rlock:quiet', r[1])
    keep = left
  end
  left = tonumber(r[2] or '0') - now
  if left > 0 and r[3] then
    redis.call('hset', KEYS[4], 'rlock:open', r[2], 'rlock:opengen', r[3])
    if r[4] then redis.call('hset', KEYS[4], 'rlock:openbase', r[4]) end
    keep = math.max(keep, left)
  end
  if keep > 0 then
    redis.call('pexpire', KEYS[4], string.format('%d', keep))
  end
end

-- rlock_tidy deletes the waiter table once the queue is empty (it holds the
-- arrival counter), so that no key outlives the last waiter.
local function rlock_tidy()
  if redis.call('zcard', KEYS[3]) == 0 then
    rlock_drop_table()
  end
end

-- The wait queue, shared by every lock kind (KEYS[3] the queue, KEYS[4] the
-- waiter table).

-- rlock_enqueue queues field (or refreshes its entry) for a lock busy for
-- pttl more ms: its entry lives that long plus grace ms; ttl is the TTL the
-- waiter's hold gets, fenced "1" when it takes a token, claim its claim
-- window in ms, queued "1" when an earlier attempt may have queued it.
local function rlock_enqueue(field, pttl, grace, ttl, fenced, claim, queued)
  local keep = pttl
  if keep < 0 then keep = 0 end
  keep = keep + tonumber(grace)
  local deadline = rlock_now() + keep
  -- A first attempt's field is new, unless a re-send of it already ran:
  -- NX keeps the place that one took. Later attempts look first.
  if queued ~= '1' or redis.call('zscore', KEYS[3], field) == false then
    local seq = redis.call('hincrby', KEYS[4], 'rlock:seq', '1')
    redis.call('zadd', KEYS[3], 'NX', seq, field)
  end
  redis.call('hset', KEYS[4], field, deadline .. '|' .. ttl .. '|' .. fenced .. '|' .. claim)
  if redis.call('pttl', KEYS[3]) < keep then
    redis.call('pexpire', KEYS[3], keep)
    redis.call('pexpire', KEYS[4], keep)
  end
end

-- rlock_unqueue takes field out of the queue and its entry out of the
-- waiter table, which goes when that emptied the queue. A field the queue
-- no longer has (rlock_next_waiter took it out to hand it the lock) leaves
-- the table as it is: what the hand-off kept there for the claim window (a
-- semaphore's hand-offs in a row) outlives the claim, however it is made.
local function rlock_unqueue(field)
  if redis.call('zrem', KEYS[3], field) == 1 then
    redis.call('hdel', KEYS[4], field)
    rlock_tidy()
  end
end

-- rlock_dequeue takes field out of the queue, when queued says an earlier
-- attempt may have put it there.
local function rlock_dequeue(field, queued)
  if queued == '1' then rlock_unqueue(field) end
end

-- rlock_next_waiter takes the first live waiter out of the queue and
-- returns its field, the TTL in ms its hold gets until claimed (its claim
-- window when shorter than its TTL: a waiter that died meanwhile blocks the
-- lock that long, not a whole TTL) and whether it is fenced ("1"); nil when
-- nobody live is queued. Waiters whose deadline has passed are dropped on
-- the way. first, called once when the queue is found not empty and before
-- anything is taken out, may stop it: nil is then returned.
--
-- accept, when given, is asked about the first live waiter before it is
-- taken: false leaves it queued and returns nil (a read-write lock's batch of
-- readers stops at the first writer).
--
-- Every redis.call costs the server a command: the queue's first two entries
-- are read at once, so that taking the last one drops the waiter table
-- without asking ZCARD (what rlock_tidy would).
local function rlock_next_waiter(first, accept)
  local now = nil
  local asked = false
  for _ = 1, 100 do
    local heads = redis.call('zrange', KEYS[3], '0', '1')
    if #heads == 0 then return nil end
    if not asked then
      asked = true
      if not first() then return nil end
    end
    local f = heads[1]
    local info = redis.call('hget', KEYS[4], f)
    local deadline, ttl, fenced, claim
    local live = false
    if info then
      deadline, ttl, fenced, claim = string.match(info, '^(%d+)|(%d+)|(%d)|?(%d*)$')
      if now == nil then now = rlock_now() end
      live = deadline ~= nil and tonumber(deadline) >= now
    end
    if live and accept and not accept(f) then return nil end
    redis.call('zrem', KEYS[3], f)
    if #heads == 1 then
      rlock_drop_table() -- the queue is empty now: its table goes too
    else
      redis.call('hdel', KEYS[4], f)
    end
    if live then
      if claim ~= '' and tonumber(claim) < tonumber(ttl) then ttl = claim end
      return f, ttl, fenced
    end
  end
  return nil
end

-- rlock_tell publishes to the client of field, on its hand-off channel, that
-- field now holds the lock: "<field>|<token>|<previous holder>|<server
-- µs>|<metadata>". The server's time orders the message against the
-- waiter's attempts (their busy replies carry it too): a hand-off older than
-- a busy reply was not claimed in time and is stale, however late it arrives.
local function rlock_tell(pub, field, token, prev, meta)
  local client = string.match(field, '^(.*):[^:]*$') or field
  -- '%d': a token from the clock has 16 digits, which Lua's own number to
  -- string (%.14g) would write with an exponent.
  redis.call(pub, KEYS[7] .. ':' .. client, field .. '|' .. string.format('%d', token) .. '|' .. prev ..
    '|' .. string.format('%d', rlock_now_us()) .. '|' .. (meta or ''))
end

-- The metadata of a semaphore's or a read-write lock's holds (setmeta.lua):
-- a hash beside the lock, "{name}:rlock_meta" (the name as is when it has a
-- brace: layout.Keys.Meta), the hold's field to its string.

-- rlock_meta_key is the metadata hash of the lock whose key is name.
local function rlock_meta_key(name)
  if string.find(name, '{', 1, true) then return name .. ':rlock_meta' end
  return '{' .. name .. '}:rlock_meta'
end

-- rlock_meta_take returns the metadata of field in mk ('' when none) and
-- takes it out: its hold ends.
local function rlock_meta_take(mk, field)
  local m = redis.call('hget', mk, field)
  if not m then return '' end
  redis.call('hdel', mk, field)
  return m
end

-- rlock_meta_extend makes mk, when it exists, live at least ms more: a hold
-- it describes was renewed.
local function rlock_meta_extend(mk, ms)
  local left = redis.call('pttl', mk)
  if left ~= -2 and left < tonumber(ms) then redis.call('pexpire', mk, ms) end
end

-- rlockMaxHolderMetas caps the holders' metadata a busy reply carries (a
-- semaphore's permits, a read-write lock's readers): the waiter's span links
-- to at most this many holds.
local rlockMaxHolderMetas = 8

-- rlock_metas returns the non-empty metadata of fields in mk, at most
-- rlockMaxHolderMetas of them, in the order of fields.
local function rlock_metas(mk, fields)
  local out = {}
  if #fields == 0 then return out end
  for _, m in ipairs(redis.call('hmget', mk, unpack(fields))) do
    if m and m ~= '' then
      out[#out + 1] = m
      if #out == rlockMaxHolderMetas then break end
    end
  end
  return out
end

-- Beside Redisson's waiters (docs/waiting.md, Beside Redisson waiters).
--
-- Redisson's waiters know nothing of the queue: they wait for a "0" on
-- KEYS[2]. So while one waits, a release that frees the lock after
-- rlockFairTurns hand-offs in a row, or with nobody queued, reserves it for
-- them (rlock_reserve): rlock callers that would wait leave the free lock
-- alone until an rlock client saw it taken and freed again, or until the
-- reservation's window passes. A reservation is as long as a Redisson
-- waiter needs, not as long as a clock says: it ends when used.

-- rlockFairTurns is how many hand-offs in a row may go to rlock waiters while
-- a Redisson waiter waits: the release after them reserves the lock.
local rlockFairTurns = 3

-- rlockReserveWindow is the window, in ms, of a reservation made by a script
-- whose caller gives none (leave, force unlock): the least the Client gives.
local rlockReserveWindow = 20

-- rlockQuietTimes and rlockQuietMax: a reservation that no Redisson waiter
-- used within its window W makes the name quiet for min(rlockQuietTimes × W,
-- rlockQuietMax) ms: no reservation is made meanwhile, so that a subscriber
-- that never takes the lock (a paused process, a tool) idles it for at most
-- 1 ms in 17.
local rlockQuietTimes = 16
local rlockQuietMax = 1000

-- rlock_others_wait reports whether KEYS[2] has subscribers that are not rlock
-- clients (Redisson processes whose threads wait): more subscribers than the
-- roll-call channel KEYS[7] has. pub is 'publish' or 'spublish'.
local function rlock_others_wait(pub)
  local cmd = 'numsub'
  if pub == 'spublish' then cmd = 'shardnumsub' end
  local n = redis.call('pubsub', cmd, KEYS[2], KEYS[7])
  return tonumber(n[2]) > tonumber(n[4])
end

-- rlock_reserve frees nothing itself: the caller freed the lock (or gave the
-- permit back) and published on KEYS[2] (Redisson's "0", or a semaphore's
-- count). It records the reservation in the waiter table (made, with a TTL,
-- when nobody is queued) for window ms at most, then publishes its
-- generation (the server's clock in µs) on the roll-call channel KEYS[7]. A
-- message on KEYS[2] that follows the generation on an rlock client's
-- connection says that the reserved lock may have been taken: its waiters
-- then pass the generation to the acquire script (rlock_reservation). base,
-- for a semaphore only, is its count of free permits now.
local function rlock_reserve(pub, window, base)
  local us = rlock_now_us()
  local now = math.floor(us / 1000)
  local gen = string.format('%d', us)
  local ends = string.format('%d', now + window)
  local opengen = gen .. '|' .. string.format('%d', window)
  if base then
    redis.call('hset', KEYS[4], 'rlock:open', ends, 'rlock:opengen', opengen, 'rlock:openbase', string.format('%d', base), 'rlock:handoffs', '0')
  else
    redis.call('hset', KEYS[4], 'rlock:open', ends, 'rlock:opengen', opengen)
  end
  if redis.call('pttl', KEYS[4]) < window then
    redis.call('pexpire', KEYS[4], string.format('%d', window))
  end
  redis.call(pub, KEYS[7], gen)
end

-- rlock_reservation looks at the name's reservation and ends it when it is
-- over: used, or missed when its window has passed with the lock free (free:
-- the caller found it so; the name is then quiet for a while). word is an
-- rlock client's word, or nil: "<generation>" (a mutex: a "0" came after the
-- reservation's generation) or "<generation>|<n>" (a semaphore: n counts
-- came after it). A mutex's reservation is used when the word names it. A
-- semaphore's, whose free permits the caller found count, is used when a
-- permit was taken by someone who is not an rlock client: its
-- "rlock:openbase" starts as the count the reservation left, and rlock's
-- scripts keep it so that it moves as the count does with every change they
-- make (a permit taken: -1; n given back with one message: n - 1), so that
-- n + base - count is how many permits others took since, at least (n: the
-- counts the client saw published since, by others or by rlock; each of
-- Redisson's give-backs publishes one). The word may come late, after a
-- waiter whose timer ran out found the reservation missed: then it ends the
-- quiet time. It returns the ms left of a reservation still on (<= 0: none)
-- and until when the name is quiet (0: it is not).
local function rlock_reservation(word, free, count)
  local r = redis.call('hmget', KEYS[4], 'rlock:open', 'rlock:opengen', 'rlock:quiet', 'rlock:openbase')
  local said, seen = string.match(word or '', '^(%d+)|?(%d*)$')
  local upto, missed = string.match(r[3] or '', '^(%d+)|(%d+)$')
  local quiet = tonumber(upto or '0')
  if said ~= nil and said == missed then
    redis.call('hdel', KEYS[4], 'rlock:quiet')
    quiet = 0
  end
  if not r[1] then return 0, quiet end
  local gen, window = string.match(r[2] or '', '^(%d+)|(%d+)$')
  local used = said ~= nil and said == gen
  if r[4] and count then
    local n = 0
    if used and seen ~= '' then n = tonumber(seen) end
    used = n + tonumber(r[4]) - count >= 1
  end
  if used then
    redis.call('hdel', KEYS[4], 'rlock:open', 'rlock:opengen', 'rlock:openbase')
    return 0, quiet
  end
  local now = rlock_now()
  local left = tonumber(r[1]) - now
  if left > 0 or not free then return left, quiet end
  local q = math.min(rlockQuietTimes * tonumber(window or rlockReserveWindow), rlockQuietMax)
  quiet = now + q
  redis.call('hdel', KEYS[4], 'rlock:open', 'rlock:opengen', 'rlock:openbase')
  redis.call('hset', KEYS[4], 'rlock:quiet', string.format('%d', quiet) .. '|' .. (gen or '0'))
  if redis.call('pttl', KEYS[4]) < q then
    redis.call('pexpire', KEYS[4], string.format('%d', q))
  end
  return 0, quiet
end

-- rlock_reserve_due reports whether a release is to reserve what it frees,
-- and whether a reservation is on. A mutex's release reserves the lock
-- when a reservation is still on (a caller that does not wait took the
-- reserved lock: it is reserved again); a semaphore's (count: its free
-- permits) leaves a reservation that is on as it is. Otherwise it reserves
-- when due (rlockFairTurns hand-offs in a row, or nobody queued) and the
-- name is not quiet; and in either case only while Redisson waiters wait.
local function rlock_reserve_due(pub, due, count)
  local left, quiet = rlock_reservation(nil, count == nil or count >= 1, count)
  if left > 0 then
    if count ~= nil then return false, true end
    return rlock_others_wait(pub), true
  end
  if not due then return false, false end
  if quiet > 0 and quiet > rlock_now() then return false, false end
  return rlock_others_wait(pub), false
end

-- rlock_latched is the answer a re-sent release (release.lua, rwrelease.lua)
-- already got, read from its latch KEYS[6]; nil when there is none to read.
-- A last level (ARGV[5]) released now (ARGV[4] '0') that finds its field
-- (n > 0) can only be a first run: running it removes the field, and a field
-- is never given out again. Anything else may be a re-send that already ran.
local function rlock_latched(n)
  if n > 0 and ARGV[5] == '1' and ARGV[4] == '0' then return nil end
  local done = redis.call('get', KEYS[6])
  if done then return tonumber(done) end
  return nil
end

-- rlock_handoff frees the lock KEYS[1] (it deletes it) and gives it to the
-- first live waiter in the queue, telling only that waiter's client, on
-- KEYS[7] .. ':' .. <its client ID>, with the previous holder's field and
-- metadata. Waiters whose deadline has passed are dropped on the way. When
-- nobody is queued it publishes Redisson's unlock message instead, so that
-- Redisson waiters and rlock clients that are not queued wake up.
--
-- The hand-off counts itself in the new hold's "rlock:handoffs". While
-- Redisson waiters wait, a release after rlockFairTurns hand-offs in a row,
-- or with nobody queued, reserves the lock for them instead (rlock_reserve,
-- for window ms at most; the queue is kept). pub is 'publish' or 'spublish';
-- prev the releasing field ('' when unknown); tokenTTL the fencing counter's
-- TTL in ms; meta and turns the lock's "rlock:meta" and "rlock:handoffs" when
-- the caller has read them (nil: read here); window the reservation's window
-- in ms, nil on a quorum master (no queue there, and no reservation). It
-- returns 1 when handed over.
local function rlock_handoff(pub, prev, tokenTTL, meta, turns, window)
  local freed = false
  local reserve = false
  local f, ttl, fenced = rlock_next_waiter(function()
    if meta == nil then
      local h = redis.call('hmget', KEYS[1], 'rlock:meta', 'rlock:handoffs')
      meta, turns = h[1], h[2]
    end
    meta = meta or ''
    turns = tonumber(turns or '0') + 1
    redis.call('del', KEYS[1])
    freed = true
    reserve = window ~= nil and rlock_reserve_due(pub, turns > rlockFairTurns)
    return not reserve
  end)
  if f then
    redis.call('hset', KEYS[1], f, '1', 'rlock:handoffs', string.format('%d', turns))
    redis.call('pexpire', KEYS[1], ttl)
    local token = 0
    if fenced == '1' then
      token = rlock_next_token(tokenTTL)
      redis.call('hset', KEYS[1], 'rlock:token', token)
    end
    rlock_tell(pub, f, token, prev, meta)
    return 1
  end
  if not freed then
    redis.call('del', KEYS[1])
  end
  -- Nobody live is queued (a queue emptied here, or before, had its waiter
  -- table dropped with it), or the lock is reserved.
  if not reserve and window ~= nil then reserve = rlock_reserve_due(pub, true) end
  redis.call(pub, KEYS[2], '0')
  if reserve then rlock_reserve(pub, tonumber(window)) end
  return 0
end

-- The semaphore's hand-off. Its keys: KEYS[1] the count of free permits
-- (Redisson's RPermitExpirableSemaphore: an integer string), KEYS[2]
-- Redisson's channel redisson_sc:{name}, KEYS[3] and KEYS[4] the queue and
-- the waiter table, KEYS[5] the permits taken: a sorted set, member the
-- holder's field, score its expiry in the server's ms; KEYS[7] the hand-off
-- channels' prefix. The count of hand-offs in a row lives in the waiter
-- table ("rlock:handoffs"), which goes with the queue, but for the claim
-- window of the hold that emptied it.
--
-- Beside Redisson's waiters a semaphore reserves one permit as the mutex
-- reserves its lock (rlock_reserve): the permit goes back to the count, and
-- rlock callers that would wait leave the count's last permit alone until a
-- permit was taken by someone who is not an rlock client (rlock_reservation)
-- or until the window passes. Other free permits, and permits given back
-- while it is on, go on as usual.

-- rlockNoLease is the score of a Redisson permit taken without a lease: it
-- never expires.
local rlockNoLease = 922337203685477

-- rlock_sem_took keeps a semaphore's reservation in step with a permit that
-- an rlock caller took from the count while it is on (rlock_reservation).
local function rlock_sem_took()
  redis.call('hincrby', KEYS[4], 'rlock:openbase', '-1')
end

-- rlock_sem_giveback puts n permits back in the count and publishes the
-- count on Redisson's channel (its waiters take as many permits as the
-- message says; rlock clients wake as many waiters). When no permit is out
-- any more, the count expires after idle ms (a name unused for that long
-- leaves nothing behind; Redisson never expires it). A reservation's base
-- moves with it (rlock_reservation): n permits, one message.
local function rlock_sem_giveback(pub, n, idle)
  local count = redis.call('incrby', KEYS[1], n)
  redis.call(pub, KEYS[2], count)
  if redis.call('exists', KEYS[5]) == 0 then
    redis.call('pexpire', KEYS[1], idle)
  end
  if tonumber(n) > 1 and redis.call('hexists', KEYS[4], 'rlock:openbase') == 1 then
    redis.call('hincrby', KEYS[4], 'rlock:openbase', string.format('%d', n - 1))
  end
  return count
end

-- rlock_sem_handoff gives a permit that prev gave back to the first live
-- waiter in the queue: the waiter's field gets a permit that expires after
-- its claim window, and only its client is told. Otherwise it goes back to
-- the count (rlock_sem_giveback, with idle): when nobody live is queued;
-- while Redisson waiters wait, after rlockFairTurns hand-offs in a row or
-- with nobody queued, when it is reserved for them (for window ms at most);
-- and while a reservation is on whose permit a caller that does not wait
-- took (the count is 0), to take its place. meta, prev's metadata, goes
-- with the hand-off message. Returns 1 when handed over, else 0.
local function rlock_sem_handoff(pub, prev, window, idle, meta)
  local count = tonumber(redis.call('get', KEYS[1]) or '0')
  local turns, reserve, on = 0, false, false
  local f, ttl = rlock_next_waiter(function()
    turns = tonumber(redis.call('hget', KEYS[4], 'rlock:handoffs') or '0') + 1
    reserve, on = rlock_reserve_due(pub, turns > rlockFairTurns, count)
    if on then turns = 0 end -- hand-offs beside a reservation do not count
    return not reserve and not (on and count < 1)
  end)
  if f then
    redis.call('zadd', KEYS[5], string.format('%d', rlock_now() + tonumber(ttl)), f)
    -- Count this one. When it emptied the queue, which dropped the table,
    -- the count outlives it for the new hold's claim window at least: also
    -- when the table was kept for what is left of a quiet time or of a
    -- reservation (rlock_drop_table), which may end within the hold; the
    -- count must outlive it, or the release after it would start again
    -- from 0 (-2: no table; -1: one without a TTL, left as it is).
    local left = redis.call('pttl', KEYS[4])
    redis.call('hset', KEYS[4], 'rlock:handoffs', string.format('%d', turns))
    if left ~= -1 and left < tonumber(ttl) then redis.call('pexpire', KEYS[4], ttl) end
    rlock_tell(pub, f, 0, prev, meta)
    return 1
  end
  if not reserve and not on then reserve = rlock_reserve_due(pub, true, count) end
  count = rlock_sem_giveback(pub, '1', idle)
  if reserve then rlock_reserve(pub, tonumber(window), count) end
  return 0
end

