// Package unlockretry retries, in the background, a release of a lockmw hold
// that failed for a Redis error. The adapters need it because nobody will
// call their Unlock again (gocron and asynq call it once): lockmw has stopped
// renewing such a hold, so the key expires within its TTL anyway, but until
// then the next job, task or leader would wait.
package unlockretry

import (
	"context"
	"errors"
	"time"

	"github.com/go-rlock/rlock/lockmw"
)

// Retryable reports whether a release of hold that failed with err leaves a
// hold in Redis that a retry can give up sooner than its TTL: not when the
// hold was lost or is no longer held, the name is invalid, or the Client
// closed.
func Retryable(hold context.Context, err error) bool {
	return err != nil && !errors.Is(err, lockmw.ErrLockLost) && !errors.Is(err, lockmw.ErrNotHeld) &&
		!errors.Is(err, lockmw.ErrInvalidName) && !errors.Is(context.Cause(hold), lockmw.ErrClosed)
}

// A Policy is when to retry: after First, then twice as long each time up to
// Max, at most Tries times (0: until one of the other ends).
type Policy struct {
	First, Max time.Duration
	Tries      int
}

// Do calls release once and returns its error. When that error is
// retryable it also starts retrying (see Start), and end runs when the
// retrying ends; otherwise end runs at once. end may be nil.
func Do(hold context.Context, release func() error, done <-chan struct{}, p Policy, end func()) error {
	err := release()
	if Retryable(hold, err) {
		Start(hold, release, done, p, end)
	} else if end != nil {
		end()
	}
	return err
}

// Start calls release on a goroutine of its own, with the back-off of p,
// until it succeeds or fails for good (see Retryable), p.Tries calls have
// failed, or done is closed (the lockmw.Client's Done); then it calls end,
// when not nil.
func Start(hold context.Context, release func() error, done <-chan struct{}, p Policy, end func()) {
	go func() {
		if end != nil {
			defer end()
		}
		d := p.First
		t := time.NewTimer(d)
		defer t.Stop()
		for try := 1; ; try++ {
			select {
			case <-t.C:
			case <-done:
				return
			}
			if err := release(); !Retryable(hold, err) || try == p.Tries {
				return
			}
			d = min(2*d, p.Max)
			t.Reset(d)
		}
	}()
}
