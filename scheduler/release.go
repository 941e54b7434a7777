package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/go-rlock/rlock/lockmw"
)

// The back-off of a release retried after a Redis error.
const (
	retryFirst = 50 * time.Millisecond
	retryMax   = 2 * time.Second
)

// release gives up the hold: at once, or at at when that is still to come.
//
// When Redis fails, lockmw leaves the hold held, and the watchdog would renew
// it for ever with nobody left to unlock it (gocron calls Unlock once; a
// closed Elector is never called again). So release returns the error and
// retries on a goroutine of its own, with back-off, until the release
// succeeds, the hold is lost (renewals failed until the key could have
// expired: then it is gone by itself) or the lockmw.Client is closed (renewal
// has stopped, so the key expires). end runs once the hold is over.
func release(m *lockmw.Mutex, hold context.Context, at time.Time, end func()) error {
	err := releaseOnce(m, hold, at)
	if err == nil || !retryable(hold, err) {
		end()
		return err
	}
	go retryRelease(m, hold, at, end)
	return err
}

func releaseOnce(m *lockmw.Mutex, hold context.Context, at time.Time) error {
	if time.Now().Before(at) {
		return m.UnlockAt(hold, at)
	}
	return m.Unlock(hold)
}

// retryable reports whether a failed release leaves a hold that renewal keeps
// alive.
func retryable(hold context.Context, err error) bool {
	return !errors.Is(err, lockmw.ErrLockLost) && !errors.Is(err, lockmw.ErrNotHeld) &&
		!errors.Is(err, lockmw.ErrInvalidName) && !errors.Is(context.Cause(hold), lockmw.ErrClosed)
}

func retryRelease(m *lockmw.Mutex, hold context.Context, at time.Time, end func()) {
	defer end()
	d := retryFirst
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		<-t.C
		if err := releaseOnce(m, hold, at); err == nil || !retryable(hold, err) {
			return
		}
		d = min(2*d, retryMax)
		t.Reset(d)
	}
}
