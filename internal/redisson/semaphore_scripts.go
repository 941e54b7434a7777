package redisson

import "github.com/redis/go-redis/v9"

// The scripts of RedissonPermitExpirableSemaphore.java, as it sends them
// (same commands, same KEYS and ARGV). Several begin by reclaiming the
// permits whose expiry score is at most the caller's now (ARGV "now"): they
// leave the zset, go back to the counter, and the new count is published
// when it is positive.

// semAcquireScriptSource is tryAcquireAsync(ids, timeoutDate)'s script.
// KEYS: name, timeout zset, channel. ARGV: permits wanted, expiry score of
// the new permits, now, the no-lease score, publish command, then the
// permits' ids (16 raw bytes each). It returns "OK" when it took them,
// ":<score>" (the earliest score in the zset) when not and that permit has a
// lease, else nil. It reclaims at most "permits wanted" expired permits.
const semAcquireScriptSource = `
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]);
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds));
  local value = redis.call('incrby', KEYS[1], #expiredIds);
  if tonumber(value) > 0 then
    redis.call(ARGV[5], KEYS[3], value);
  end;
end;
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
  redis.call('decrby', KEYS[1], ARGV[1]);
  for i = 6, #ARGV, 1 do
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]);
  end;
  local ttl = redis.call('pttl', KEYS[1]);
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl);
  end;
  return 'OK';
end;
local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES');
if v[1] ~= nil and v[2] ~= ARGV[4] then
  return ':' .. tostring(v[2]);
end
return nil;`

var (
	semAcquireScript = redis.NewScript(semAcquireScriptSource)

	// semReleaseScript is tryReleaseAsync(permitId)'s. KEYS: name, channel,
	// timeout zset (this order). ARGV: the permit's id, 1, now, publish
	// command. A permit in the zset goes back to the counter, and the new
	// count is published, even when it had expired; the script returns 1,
	// or 0 when the permit was not in the zset or had expired.
	semReleaseScript = redis.NewScript(`
local expire = redis.call('zscore', KEYS[3], ARGV[1]);
local removed = redis.call('zrem', KEYS[3], ARGV[1]);
if tonumber(removed) ~= 1 then
  return 0;
end;
local value = redis.call('incrby', KEYS[1], ARGV[2]);
redis.call(ARGV[4], KEYS[2], value);
if tonumber(expire) <= tonumber(ARGV[3]) then
  return 0;
end;
return 1;`)

	// semAvailableScript is availablePermitsAsync's. KEYS: name, timeout
	// zset, channel. ARGV: now, publish command. It reclaims every expired
	// permit and returns the counter (0 when unset).
	semAvailableScript = redis.NewScript(`
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1);
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds));
  local value = redis.call('incrby', KEYS[1], #expiredIds);
  if tonumber(value) > 0 then
    redis.call(ARGV[2], KEYS[3], value);
  end;
  return value;
end;
local ret = redis.call('get', KEYS[1]);
return ret == false and 0 or ret;`)

	// semTrySetScript is trySetPermitsAsync's. KEYS: name, channel. ARGV:
	// permits, publish command. It sets the counter only when it does not
	// exist, publishes the permits then, and returns 1; else 0.
	semTrySetScript = redis.NewScript(`
local value = redis.call('get', KEYS[1]);
if (value == false) then
  redis.call('set', KEYS[1], ARGV[1]);
  redis.call(ARGV[2], KEYS[2], ARGV[1]);
  return 1;
end;
return 0;`)
)
