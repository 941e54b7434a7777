package redisson

import (
	"context"
	"sync/atomic"
	"time"
)

// latch is RedissonLockEntry's latch, a java.util.concurrent.Semaphore that
// starts with no permit: release adds one permit, which wakes one waiting
// thread or, when none waits, stays for the next one; acquire takes one.
//
// The permits are the elements of a channel of empty structs, which costs
// no memory however large its buffer.
type latch struct {
	permits chan struct{}
	queued  atomic.Int64 // threads blocked in tryAcquire (getQueueLength)
}

// maxPermits bounds the permits kept; Java's bound is 2³¹-1. More "0"
// messages than this with no thread taking one would be dropped.
const maxPermits = 1 << 30

func newLatch() *latch { return &latch{permits: make(chan struct{}, maxPermits)} }

// release adds one permit (Semaphore.release).
func (l *latch) release() {
	select {
	case l.permits <- struct{}{}:
	default:
	}
}

// releaseQueued adds one permit per thread blocked in tryAcquire
// (release(getQueueLength())): a thread not yet blocked, though about to
// wait, is not counted, as in Java.
func (l *latch) releaseQueued() {
	for range l.queued.Load() {
		l.release()
	}
}

// tryAcquire takes one permit, waiting up to d for one
// (Semaphore.tryAcquire(timeout, unit)); d < 0 waits without a bound
// (Semaphore.acquire). It reports whether it took one, and returns ctx's
// error when ctx ends first, as an interrupted Java thread would throw.
func (l *latch) tryAcquire(ctx context.Context, d time.Duration) (bool, error) {
	select {
	case <-l.permits: // a permit already there: no timer
		return true, nil
	default:
	}
	l.queued.Add(1)
	defer l.queued.Add(-1)
	var timeout <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-l.permits:
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// available is the number of permits kept (Semaphore.availablePermits).
func (l *latch) available() int { return len(l.permits) }
