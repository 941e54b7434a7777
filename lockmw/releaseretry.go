package lockmw

import (
	"context"
	"errors"
	"time"
)

// releaseRetry is the back-off of [WithReleaseRetry]: after first, then
// twice as long each time up to max, at most tries times (0: no limit).
type releaseRetry struct {
	first, max time.Duration
	tries      int
}

// retryable reports whether a release of the hold behind hctx that failed
// with err leaves a hold in Redis that a retry can give back sooner than its
// TTL: not when the hold was lost or is no longer held, the name is invalid,
// the server refused in a way trying again cannot fix (failureKind, as a
// wait ends on it), or the Client closed.
func retryable(hctx context.Context, err error) bool {
	return err != nil && !errors.Is(err, ErrLockLost) && !errors.Is(err, ErrNotHeld) &&
		!errors.Is(err, ErrInvalidName) && failureKind(err) != refused && !errors.Is(context.Cause(hctx), ErrClosed)
}

// start calls release on a goroutine of its own, with the back-off of r,
// until it succeeds or fails for good (see retryable), r.tries calls have
// failed, or done (the Client's Done) is closed; then it calls end, when not
// nil.
func (r *releaseRetry) start(hctx context.Context, release func() error, done <-chan struct{}, end func()) {
	go func() {
		if end != nil {
			defer end()
		}
		d := r.first
		t := time.NewTimer(d)
		defer t.Stop()
		for try := 1; ; try++ {
			select {
			case <-t.C:
			case <-done:
				return
			}
			if err := release(); !retryable(hctx, err) || try == r.tries {
				return
			}
			d = min(2*d, r.max)
			t.Reset(d)
		}
	}()
}
