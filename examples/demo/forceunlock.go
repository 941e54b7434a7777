package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/lockmw"
)

// forceWatchdog is the holder's watchdog timeout: it renews every third of
// it, and learns of the force unlock at its next renewal.
const forceWatchdog = 300 * time.Millisecond

// forceUnlockSection has a holder, with a short watchdog timeout, and a
// waiter on one lock; an admin force-unlocks it. The lock goes to the waiter,
// and the holder's hold context is cancelled with cause lockmw.ErrLockLost.
func forceUnlockSection(ctx context.Context, p *printer, rdb redis.UniversalClient) error {
	const name = "ledger:close-month"
	holder := lockmw.New(rdb, withName("month-end-job"), lockmw.WithWatchdogTimeout(forceWatchdog))
	defer holder.Close()
	standby := lockmw.New(rdb, withName("standby-job"))
	defer standby.Close()
	admin := lockmw.New(rdb, withName("admin"))
	defer admin.Close()

	m := holder.Mutex(name)
	hctx, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	lostAt := make(chan time.Time, 1)
	stopWatch := context.AfterFunc(hctx, func() { lostAt <- time.Now() })
	defer stopWatch()
	p.event("month-end-job holds %q (watchdog timeout %v: renewed every %v)", name, forceWatchdog, forceWatchdog/3)

	// The standby waits for the lock in the background.
	type took struct {
		at  time.Time
		err error
	}
	standbyTook := make(chan took, 1)
	wctx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	go func() {
		sm := standby.Mutex(name)
		sctx, err := sm.Lock(wctx)
		t := took{at: time.Now(), err: err}
		if err == nil {
			t.err = sm.Unlock(sctx)
		}
		standbyTook <- t
	}()
	p.event("standby-job waits for it")
	// Give the standby a moment to join the lock's queue; the story is the
	// same if it has not yet (it then takes the free lock).
	time.Sleep(50 * time.Millisecond)

	forced := time.Now()
	existed, err := admin.Mutex(name).ForceUnlock(ctx)
	if err != nil {
		return err
	}
	p.event("admin: ForceUnlock(%q) = %v", name, existed)

	var t took
	select {
	case t = <-standbyTook:
	case <-ctx.Done():
		return fmt.Errorf("the standby never got the lock: %w", ctx.Err())
	}
	if t.err != nil {
		return fmt.Errorf("standby: %w", t.err)
	}
	p.event("standby-job took the lock %v after the force unlock (and released it)", t.at.Sub(forced).Round(time.Millisecond))

	var lost time.Time
	select {
	case lost = <-lostAt:
	case <-time.After(10 * forceWatchdog):
		return fmt.Errorf("the holder's context was not cancelled within %v of the force unlock", 10*forceWatchdog)
	}
	cause := context.Cause(hctx)
	p.event("month-end-job's hold context was cancelled %v after the force unlock, at its next renewal",
		lost.Sub(forced).Round(time.Millisecond))
	p.event("  context.Cause(hctx) = %v", cause)
	if !errors.Is(cause, lockmw.ErrLockLost) {
		return fmt.Errorf("cause %v, want ErrLockLost", cause)
	}
	uerr := m.Unlock(hctx)
	p.event("  its m.Unlock(hctx) = %v", uerr)
	if !errors.Is(uerr, lockmw.ErrLockLost) {
		return fmt.Errorf("the holder's Unlock after the loss: %v, want ErrLockLost", uerr)
	}
	p.summary("errors.Is(context.Cause(hctx), lockmw.ErrLockLost) = true: the work under the lock can stop")
	return nil
}
