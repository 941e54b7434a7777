package redisson

import (
	"context"
	"errors"
	"time"
)

// TryLock tries to take the lock for the thread within waitTime
// (RedissonLock's tryLock(waitTime, leaseTime, unit)) and reports whether it
// did; it returns ctx's error if ctx ends first. leaseTime ≤ 0 takes
// WatchdogTimeout, not renewed.
//
// As in Redisson, the time left is counted down after each step: the first
// try; subscribing (bounded by the time left); then, until it holds the lock
// or no time is left, a try and a wait on the latch for the holder's TTL or
// the time left, whichever is shorter.
func (l *Lock) TryLock(ctx context.Context, threadID int64, waitTime, leaseTime time.Duration) (bool, error) {
	return l.c.tryLock(ctx, l, threadID, waitTime, leaseTime)
}

// tryLock is RedissonLock.tryLock(waitTime, leaseTime, unit) for any kind.
func (c *Client) tryLock(ctx context.Context, a attempter, threadID int64, waitTime, leaseTime time.Duration) (bool, error) {
	left := waitTime
	start := time.Now()
	ok, _, err := a.tryAcquire(ctx, threadID, leaseTime)
	if err != nil || ok {
		return ok, err
	}
	if left -= time.Since(start); left <= 0 {
		return false, nil
	}

	start = time.Now()
	sctx, cancel := context.WithTimeout(ctx, left)
	e, err := c.subscribe(sctx, a.channel())
	cancel()
	if e != nil {
		defer c.unsubscribe(a.channel(), e)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return false, nil // "Unable to acquire subscription lock after ..."
		}
		return false, err
	}
	if left -= time.Since(start); left <= 0 {
		return false, nil
	}
	return c.tryLoop(ctx, a, e, threadID, left, leaseTime)
}

// tryLoop is TryLock's loop once subscribed, with left to wait.
func (c *Client) tryLoop(ctx context.Context, a attempter, e *entry, threadID int64, left, leaseTime time.Duration) (bool, error) {
	for {
		start := time.Now()
		ok, ttl, err := a.tryAcquire(ctx, threadID, leaseTime)
		if err != nil || ok {
			return ok, err
		}
		if left -= time.Since(start); left <= 0 {
			return false, nil
		}

		start = time.Now()
		wait := left
		if ttl >= 0 && ttl < left {
			wait = ttl
		}
		woken, err := e.latch.tryAcquire(ctx, wait)
		if err == nil {
			err = c.afterWake(ctx, woken)
		}
		if err != nil {
			return false, err
		}
		if left -= time.Since(start); left <= 0 {
			return false, nil
		}
	}
}
