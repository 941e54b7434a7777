package redisson

import "github.com/redis/go-redis/v9"

// The scripts of RedissonReadLock.java and RedissonWriteLock.java, as they
// send them (same commands, same KEYS and ARGV). Every one reads or writes
// the hash name, whose field "mode" is "read" or "write", whose readers
// have the field "<id>:<threadId>" (their hold count) and whose writer has
// "<id>:<threadId>:write" (its hold count). Each level n of a reader's hold
// has a string key "<prefix>:<id>:<threadId>:rwlock_timeout:<n>" carrying
// that level's lease; prefix is "{name}" (or name when it has a "{").

// readAcquireScriptSource is RedissonReadLock.tryLockInnerAsync's script.
// KEYS: name, the thread's timeout prefix
// ("{name}:<id>:<threadId>:rwlock_timeout"). ARGV: lease in ms, the reader
// field, the same thread's writer field. It answers nil when the thread
// took a read level (no lock, read mode, or write mode held by this very
// thread's writer), else the hash's pttl. A new level n sets its timeout key
// to the lease; the hash's TTL becomes the larger of what it had and the
// lease (the first reader sets it to the lease).
const readAcquireScriptSource = `
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('set', KEYS[2] .. ':1', 1);
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local level = redis.call('hincrby', KEYS[1], ARGV[2], 1);
  local timeout = KEYS[2] .. ':' .. level;
  redis.call('set', timeout, 1);
  redis.call('pexpire', timeout, ARGV[1]);
  local remaining = redis.call('pttl', KEYS[1]);
  redis.call('pexpire', KEYS[1], math.max(remaining, ARGV[1]));
  return nil;
end;
return redis.call('pttl', KEYS[1]);`

// writeAcquireScriptSource is RedissonWriteLock.tryLockInnerAsync's
// script. KEYS: name. ARGV: lease in ms, the writer field. It answers nil
// when the thread took a write level (no lock, or write mode with this
// thread's writer field), else the hash's pttl. Re-entry adds the lease to
// the TTL left instead of setting it.
const writeAcquireScriptSource = `
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  local remaining = redis.call('pttl', KEYS[1]);
  redis.call('pexpire', KEYS[1], remaining + ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`

var (
	readAcquireScript  = redis.NewScript(readAcquireScriptSource)
	writeAcquireScript = redis.NewScript(writeAcquireScriptSource)

	// readUnlockScript is RedissonReadLock.unlockInnerAsync's. KEYS: name,
	// channel, the thread's timeout prefix, the key prefix ("{name}"), the
	// unlock latch. ARGV: the message (0), the reader field, the publish
	// command, the latch's TTL in ms. A latch already set answers its value.
	// An absent lock publishes "0" and answers nil; a thread without a read
	// hold answers nil. Otherwise one level goes (the field at 0, and the
	// level's timeout key). Then, while fields other than "mode" remain, the
	// hash's TTL becomes the longest pttl of every reader level's timeout key
	// (the writer field's "timeout keys" do not exist): when that is above
	// 0 the script answers 0; when not and a writer holds, it answers 0 and
	// leaves the TTL alone. Else (nothing but "mode" left, or readers whose
	// timeout keys all expired) it deletes the hash, publishes "0" and
	// answers 1.
	readUnlockScript = redis.NewScript(`
local latch = redis.call('get', KEYS[5]);
if latch ~= false then
  return tonumber(latch);
end;
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
  redis.call(ARGV[3], KEYS[2], ARGV[1]);
  redis.call('set', KEYS[5], 1, 'px', ARGV[4]);
  return nil;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return nil;
end;
local left = redis.call('hincrby', KEYS[1], ARGV[2], -1);
if left == 0 then
  redis.call('hdel', KEYS[1], ARGV[2]);
end;
redis.call('del', KEYS[3] .. ':' .. (left + 1));
if redis.call('hlen', KEYS[1]) > 1 then
  local longest = -3;
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local levels = tonumber(redis.call('hget', KEYS[1], field));
    if type(levels) == 'number' then
      for n = levels, 1, -1 do
        local pttl = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. n);
        longest = math.max(pttl, longest);
      end;
    end;
  end;
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest);
    redis.call('set', KEYS[5], 0, 'px', ARGV[4]);
    return 0;
  end;
  if mode == 'write' then
    redis.call('set', KEYS[5], 0, 'px', ARGV[4]);
    return 0;
  end;
end;
redis.call('del', KEYS[1]);
redis.call(ARGV[3], KEYS[2], ARGV[1]);
redis.call('set', KEYS[5], 1, 'px', ARGV[4]);
return 1;`)

	// writeUnlockScript is RedissonWriteLock.unlockInnerAsync's. KEYS: name,
	// channel, the unlock latch. ARGV: the message (1), the handle's lease in
	// ms, the writer field, the publish command, the latch's TTL in ms. A
	// latch already set answers its value. An absent lock publishes "1" and
	// answers nil; read mode, or a thread without the writer field, answers
	// nil. A level that leaves levels sets the TTL to the lease and answers
	// 0. The last level removes the field: when only "mode" is left the hash
	// is deleted and "1" published; else (the writer's own read levels are
	// left) mode becomes "read", with no message and the TTL untouched. Both
	// answer 1.
	writeUnlockScript = redis.NewScript(`
local latch = redis.call('get', KEYS[3]);
if latch ~= false then
  return tonumber(latch);
end;
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
  redis.call(ARGV[4], KEYS[2], ARGV[1]);
  redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
  return nil;
end;
if mode == 'write' then
  if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil;
  end;
  local left = redis.call('hincrby', KEYS[1], ARGV[3], -1);
  if left > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
    return 0;
  end;
  redis.call('hdel', KEYS[1], ARGV[3]);
  if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1]);
    redis.call(ARGV[4], KEYS[2], ARGV[1]);
  else
    redis.call('hset', KEYS[1], 'mode', 'read');
  end;
  redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
  return 1;
end;
return nil;`)

	lockRenewScript = redis.NewScript(lockRenewScriptSource)
	readRenewScript = redis.NewScript(readRenewScriptSource)
)

// lockRenewScriptSource is renewal.LockTask's, which renews the write locks'
// holds (and RLocks'). KEYS: lock names. ARGV: the watchdog timeout in
// ms, then one field per name (its first renewed thread's). Each name
// whose hash has its field gets the timeout as TTL; the answer has 1
// for it, else 0, in KEYS' order.
const lockRenewScriptSource = `
local result = {};
for i = 1, #KEYS, 1 do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1]);
    table.insert(result, 1);
  else
    table.insert(result, 0);
  end;
end;
return result;`

// readRenewScriptSource is renewal.ReadLockTask's. KEYS: pairs of a lock name
// and its key prefix ("{name}"). ARGV: the watchdog timeout in ms, then
// per pair the count of reader fields renewed and those fields. Each
// field still in the hash has every level's timeout key, 1 to its hold
// count, set to the timeout; a name with any such field has the hash's
// TTL set to it too. The answer has 1 per such name, else 0, in order.
const readRenewScriptSource = `
local result = {};
local arg = 2;
for i = 1, #KEYS, 2 do
  local alive = false;
  local fields = tonumber(ARGV[arg]);
  arg = arg + 1;
  for k = 1, fields do
    local levels = redis.call('hget', KEYS[i], ARGV[arg]);
    if levels ~= false then
      alive = true;
      for n = levels, 1, -1 do
        redis.call('pexpire', KEYS[i + 1] .. ':' .. ARGV[arg] .. ':rwlock_timeout:' .. n, ARGV[1]);
      end;
    end;
    arg = arg + 1;
  end;
  if alive then
    redis.call('pexpire', KEYS[i], ARGV[1]);
    table.insert(result, 1);
  else
    table.insert(result, 0);
  end;
end;
return result;`
