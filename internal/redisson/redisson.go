package redisson

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// acquireScriptSource is RedissonLock.tryLockInnerAsync's script: nil when
// acquired or re-entered, else the holder's pttl.
const acquireScriptSource = `
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`

// Redisson's scripts, as RedissonLock.java sends them: unlockScript is
// unlockInnerAsync's.
var (
	acquireScript = redis.NewScript(acquireScriptSource)
	unlockScript  = redis.NewScript(`
local val = redis.call('get', KEYS[3]);
if val ~= false then return tonumber(val); end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
  return 0;
end;
redis.call('del', KEYS[1]);
redis.call(ARGV[4], KEYS[2], ARGV[1]);
redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
return 1;`)
)

// Channel is Redisson's unlock channel of a lock name without a hash tag.
func Channel(name string) string { return "redisson_lock__channel:{" + name + "}" }

// TryAcquire runs Redisson's acquire for field ("<uuid>:<threadId>") with a
// ttl lease: (true, 0) when acquired (or re-entered), else (false, pttl).
func TryAcquire(ctx context.Context, rdb redis.Scripter, name, field string, ttl time.Duration) (bool, time.Duration, error) {
	v, err := acquireScript.Run(ctx, rdb, []string{name}, ttl.Milliseconds(), field).Int64()
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	return false, time.Duration(v) * time.Millisecond, err
}

// Unlock runs Redisson's unlock of one level for field, with the latch of
// requestID: 1 when released, 0 when levels remain, redis.Nil when field did
// not hold it. A released lock publishes "0" on Channel(name).
func Unlock(ctx context.Context, rdb redis.Scripter, name, field, requestID string) (int64, error) {
	args := unlockArgs(field, WatchdogTimeout, 3*time.Second, "publish")
	return unlockScript.Run(ctx, rdb, unlockKeys(name, requestID), args...).Int64()
}

// WatchdogTimeout is Redisson's default lockWatchdogTimeout: the lease of a
// lock taken without one, and the TTL an unlock that leaves levels sets.
const WatchdogTimeout = 30 * time.Second

// unlockLatchTTL is how long a [Lock.Unlock]'s latch may live (it deletes it
// after the script): Redisson's (timeout + retry delay) × retry attempts,
// with 4.x's defaults (3 s + 1 to 2 s) × 4.
const unlockLatchTTL = 18 * time.Second

// LatchKey is Redisson's unlock latch key of requestID (getUnlockLatchName):
// "redisson_unlock_latch:{name}:<requestID>", without the braces when name
// already has a "{".
func LatchKey(name, requestID string) string {
	return prefixName("redisson_unlock_latch", name) + ":" + requestID
}

func unlockKeys(name, requestID string) []string {
	return []string{name, Channel(name), LatchKey(name, requestID)}
}

// unlockArgs are the unlock script's ARGV: the message, the lease an unlock
// that leaves levels sets, the field, the publish command, the latch's TTL.
func unlockArgs(field string, lease, latchTTL time.Duration, publish string) []any {
	return []any{0, lease.Milliseconds(), field, publish, latchTTL.Milliseconds()}
}
