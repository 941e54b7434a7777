// Package redisson speaks Redisson's RLock protocol from Go, for rlock's
// tests and load tool: a Java service's lock, played on the wire, to check
// that rlock and Redisson exclude and wake each other, and to measure what
// Redisson's own scripts cost beside rlock's.
//
// The scripts follow Redisson's RLock as described in the seed documents
// (4.x's one-branch acquire; the unlock with its latch that publishes "0" on
// redisson_lock__channel:{name}). They are not rlock's scripts.
package redisson

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	acquireScript = redis.NewScript(`
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`)
	unlockScript = redis.NewScript(`
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
	keys := []string{name, Channel(name), "redisson_unlock_latch:{" + name + "}:" + requestID}
	return unlockScript.Run(ctx, rdb, keys, 0, 30000, field, "publish", 3000).Int64()
}
