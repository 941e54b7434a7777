package redisson

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

var (
	// ErrNotHeld is returned by [Lock.Unlock] when the thread does not hold
	// the lock (Redisson's IllegalMonitorStateException).
	ErrNotHeld = errors.New("redisson: attempt to unlock lock, not locked by current thread")
	// ErrClosed is returned by a wait that needs a subscription after
	// [Client.Close].
	ErrClosed = errors.New("redisson: client is closed")
)

// Lock is one process's handle on one lock name (RedissonLock): its threads
// take it with Lock or TryLock and release it with Unlock, each passing its
// thread id, as Java passes Thread.currentThread().getId().
type Lock struct {
	c    *Client
	name string
	// leaseTime is internalLockLeaseTime: the last lease given to an
	// acquisition through this handle, or WatchdogTimeout; an unlock that
	// leaves levels sets it as the TTL, and an acquisition without a lease
	// uses it. Like Redisson's, it is shared by the handle's threads.
	leaseTime atomic.Int64
}

func (l *Lock) field(threadID int64) string {
	return l.c.id + ":" + strconv.FormatInt(threadID, 10)
}

func (l *Lock) channel() string { return Channel(l.name) }

// tryAcquire runs the acquire script for the thread (tryAcquireAsync):
// acquired, or the holder's pttl (negative when the lock has no TTL).
// leaseTime ≤ 0 means the handle's lease.
func (l *Lock) tryAcquire(ctx context.Context, threadID int64, leaseTime time.Duration) (bool, time.Duration, error) {
	lease := leaseTime
	if lease <= 0 {
		lease = time.Duration(l.leaseTime.Load())
	}
	ok, ttl, err := TryAcquire(ctx, l.c.rdb, l.name, l.field(threadID), lease)
	if ok && leaseTime > 0 {
		l.leaseTime.Store(int64(leaseTime))
	}
	return ok, ttl, err
}

// Lock waits until the thread holds the lock, or ctx ends (RedissonLock's
// lock(leaseTime, unit, interruptibly): ctx's end is the interrupt).
// leaseTime ≤ 0 takes WatchdogTimeout, not renewed. The thread tries once;
// when the lock is busy it subscribes and then, until it holds the lock,
// tries and waits on the latch for the holder's TTL, or without a bound
// when the lock has none.
func (l *Lock) Lock(ctx context.Context, threadID int64, leaseTime time.Duration) error {
	ok, _, err := l.tryAcquire(ctx, threadID, leaseTime)
	if err != nil || ok {
		return err
	}
	e, err := l.c.subscribe(ctx, l.channel())
	if e != nil {
		defer l.c.unsubscribe(l.channel(), e)
	}
	if err != nil {
		return err
	}
	for {
		ok, ttl, err := l.tryAcquire(ctx, threadID, leaseTime)
		if err != nil || ok {
			return err
		}
		if ttl < 0 {
			ttl = -1 // no TTL: wait for a "0" only
		}
		woken, err := e.latch.tryAcquire(ctx, ttl)
		if err == nil {
			err = l.c.afterWake(ctx, woken)
		}
		if err != nil {
			return err
		}
	}
}

// Unlock releases one level of the thread's hold (unlockAsync): the last
// level deletes the lock and publishes "0" on its channel. It returns
// ErrNotHeld when the thread does not hold it. Like Redisson, it runs the
// unlock script with a new request id, then deletes that request's latch.
func (l *Lock) Unlock(ctx context.Context, threadID int64) error {
	requestID := uuid.NewString()
	lease := time.Duration(l.leaseTime.Load())
	args := unlockArgs(l.field(threadID), lease, unlockLatchTTL, l.c.publishCmd())
	res, err := unlockScript.Run(ctx, l.c.rdb, unlockKeys(l.name, requestID), args...).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if errors.Is(err, redis.Nil) || res == 1 { // cancelExpirationRenewal
		l.leaseTime.Store(int64(WatchdogTimeout))
	}
	if derr := l.c.rdb.Del(ctx, LatchKey(l.name, requestID)).Err(); derr != nil {
		return derr
	}
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	return nil
}
