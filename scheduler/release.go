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
// When Redis fails, lockmw stops renewing the hold (so the key expires within
// its TTL) but leaves it in Redis until then: a job of another instance, or
// the next leader, would wait that long. So release returns the error and
// retries on a goroutine of its own, with back-off, until the release
// succeeds, the hold is found lost (the key expired meanwhile), or the
// lockmw.Client is closed (done). end runs once the hold is over.
func release(m *lockmw.Mutex, hold context.Context, at time.Time, end func(), done <-chan struct{}) error {
	err := releaseOnce(m, hold, at)
	if err == nil || !retryable(hold, err) {
		end()
		return err
	}
	go retryRelease(m, hold, at, end, done)
	return err
}

func releaseOnce(m *lockmw.Mutex, hold context.Context, at time.Time) error {
	if time.Now().Before(at) {
		return m.UnlockAt(hold, at)
	}
	return m.Unlock(hold)
}

// retryable reports whether a failed release leaves a hold in Redis that a
// retry can give up sooner than its TTL.
func retryable(hold context.Context, err error) bool {
	return !errors.Is(err, lockmw.ErrLockLost) && !errors.Is(err, lockmw.ErrNotHeld) &&
		!errors.Is(err, lockmw.ErrInvalidName) && !errors.Is(context.Cause(hold), lockmw.ErrClosed)
}

func retryRelease(m *lockmw.Mutex, hold context.Context, at time.Time, end func(), done <-chan struct{}) {
	defer end()
	d := retryFirst
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-done:
			return
		}
		if err := releaseOnce(m, hold, at); err == nil || !retryable(hold, err) {
			return
		}
		d = min(2*d, retryMax)
		t.Reset(d)
	}
}
