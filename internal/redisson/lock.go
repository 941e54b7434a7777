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
	return l.c.lock(ctx, l, threadID, leaseTime)
}

// attempter is a lock kind as the wait loops of RedissonLock see it (the
// read and write locks inherit them): its channel, and one run of its
// acquire script for a thread (tryAcquire), which reports whether the
// thread holds it, else the TTL to wait for (negative: none).
type attempter interface {
	channel() string
	tryAcquire(ctx context.Context, threadID int64, leaseTime time.Duration) (bool, time.Duration, error)
}

// lock is RedissonLock.lock(leaseTime, unit, interruptibly) for any kind.
func (c *Client) lock(ctx context.Context, a attempter, threadID int64, leaseTime time.Duration) error {
	if c.nodeWake {
		return c.nodeLock(ctx, a, threadID, leaseTime)
	}
	ok, _, err := a.tryAcquire(ctx, threadID, leaseTime)
	if err != nil || ok {
		return err
	}
	e, err := c.subscribe(ctx, a.channel())
	if e != nil {
		defer c.unsubscribe(a.channel(), e)
	}
	if err != nil {
		return err
	}
	for {
		ok, ttl, err := a.tryAcquire(ctx, threadID, leaseTime)
		if err != nil || ok {
			return err
		}
		if ttl < 0 {
			ttl = -1 // no TTL: wait for a message only
		}
		woken, err := e.latch.tryAcquire(ctx, ttl)
		if err == nil {
			err = c.afterWake(ctx, woken)
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
	latch := LatchKey(l.name, uuid.NewString())
	return l.c.unlock(ctx, latch, func() (int64, error) {
		lease := time.Duration(l.leaseTime.Load())
		args := unlockArgs(l.field(threadID), lease, unlockLatchTTL, l.c.publishCmd())
		keys := []string{l.name, l.channel(), latch}
		return unlockScript.Run(ctx, l.c.rdb, keys, args...).Int64()
	}, func(released bool) {
		if released { // cancelExpirationRenewal
			l.leaseTime.Store(int64(WatchdogTimeout))
		}
	})
}

// unlock is RedissonBaseLock.unlockAsync0 for any kind: run runs the
// kind's unlock script with the request's latch key; cancel is the kind's
// cancelExpirationRenewal, told whether the script answered nil (not held),
// 1 (released) or failed, rather than 0; then the latch is deleted.
// A nil answer is ErrNotHeld.
func (c *Client) unlock(ctx context.Context, latch string, run func() (int64, error), cancel func(released bool)) error {
	res, err := run()
	notHeld := errors.Is(err, redis.Nil)
	cancel(err != nil || res == 1)
	if err != nil && !notHeld {
		return err
	}
	if derr := c.rdb.Del(ctx, latch).Err(); derr != nil {
		return derr
	}
	if notHeld {
		return ErrNotHeld
	}
	return nil
}
