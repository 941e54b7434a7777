package redisson

import (
	"context"
	"errors"
	"time"
)

// subscribe counts the thread in to the semaphore's entry
// (SemaphorePubSub.subscribe); the caller calls c.unsubscribe once done.
func (s *Semaphore) subscribe(ctx context.Context) (*entry, error) {
	return s.c.subscribeWith(ctx, s.channel(), s.c.semaphoreMessage)
}

// Acquire waits until the thread holds a permit, and returns its id, or
// ctx's error (acquire(leaseTime, unit); ctx's end is the interrupt). A
// negative leaseTime is Redisson's -1: the permit has no lease.
//
// As in Redisson, the thread tries once; when no permit is free it
// subscribes and then, until it holds one, tries and waits on the latch:
// until the earliest lease of a held permit runs out, or, when no held
// permit has a lease, until a message releases a latch permit.
func (s *Semaphore) Acquire(ctx context.Context, leaseTime time.Duration) (string, error) {
	a, err := s.tryAcquire(ctx, leaseTime)
	if err != nil || a.id != "" {
		return a.id, err
	}
	e, err := s.subscribe(ctx)
	if e != nil {
		defer s.c.unsubscribe(s.channel(), e)
	}
	if err != nil {
		return "", err
	}
	for {
		a, err := s.tryAcquire(ctx, leaseTime)
		if err != nil || a.id != "" {
			return a.id, err
		}
		woken, err := e.latch.tryAcquire(ctx, a.untilEarliest())
		if err == nil {
			err = s.c.afterWake(ctx, woken)
		}
		if err != nil {
			return "", err
		}
	}
}

// TryAcquire tries to take a permit within waitTime
// (tryAcquire(waitTime, leaseTime, unit)) and returns its id and true, or
// false when waitTime ran out; it returns ctx's error if ctx ends first. A
// negative leaseTime is Redisson's -1: no lease.
//
// As in Redisson, the time left is counted down after each step: the first
// try; subscribing (bounded by the time left); then, until it holds a
// permit or no time is left, a try and a wait on the latch for the time
// left, or until the earliest lease runs out when that is sooner.
func (s *Semaphore) TryAcquire(ctx context.Context, waitTime, leaseTime time.Duration) (string, bool, error) {
	left := waitTime
	start := time.Now()
	a, err := s.tryAcquire(ctx, leaseTime)
	if err != nil || a.id != "" {
		return a.id, a.id != "", err
	}
	if left -= time.Since(start); left <= 0 {
		return "", false, nil
	}

	start = time.Now()
	sctx, cancel := context.WithTimeout(ctx, left)
	e, err := s.subscribe(sctx)
	cancel()
	if e != nil {
		defer s.c.unsubscribe(s.channel(), e)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return "", false, nil // future.get(time) timed out
		}
		return "", false, err
	}
	if left -= time.Since(start); left <= 0 {
		return "", false, nil
	}
	return s.tryLoop(ctx, e, left, leaseTime)
}

// tryLoop is TryAcquire's loop once subscribed, with left to wait.
func (s *Semaphore) tryLoop(ctx context.Context, e *entry, left, leaseTime time.Duration) (string, bool, error) {
	for {
		start := time.Now()
		a, err := s.tryAcquire(ctx, leaseTime)
		if err != nil || a.id != "" {
			return a.id, a.id != "", err
		}
		if left -= time.Since(start); left <= 0 {
			return "", false, nil
		}

		start = time.Now()
		wait := left
		if until := a.untilEarliest(); until >= 0 && until < left {
			wait = until
		}
		woken, err := e.latch.tryAcquire(ctx, wait)
		if err == nil {
			err = s.c.afterWake(ctx, woken)
		}
		if err != nil {
			return "", false, err
		}
		if left -= time.Since(start); left <= 0 {
			return "", false, nil
		}
	}
}
