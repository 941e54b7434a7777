package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-rlock/rlock/lockmw"
)

// releaseRetry is the back-off of a release retried after a Redis error:
// until it succeeds, the key is found expired or the lockmw.Client closes.
// When Redis fails, lockmw stops renewing the hold (so the key expires within
// its TTL) but leaves it in Redis until then: a job of another instance, or
// the next leader, would wait that long.
var releaseRetry = lockmw.WithReleaseRetry(50*time.Millisecond, 2*time.Second, 0)

// A held lock is a lockmw.WithLock call, on a goroutine of its own, whose fn
// waits until release: gocron takes a lock in one call (Locker.Lock) and
// gives it up in another (Lock.Unlock), and WithLock holds it in between.
type held struct {
	hold    context.Context // the hold context fn got
	release chan struct{}   // closed to make fn return
	result  chan error      // WithLock's error
	once    sync.Once
}

// take makes one attempt to take m with the watchdog (no wait, no lease). It
// returns when the attempt does, when timeout has passed or when ctx ends,
// whatever Redis does (lockmw.WithAcquireContext). The hold context derives
// from ctx's values only, so it ends only when the hold does, with
// lockmw's cause (ErrLockLost, ErrClosed). The release, minHold after the
// attempt began at the earliest, is retried in the background.
func take(ctx context.Context, m *lockmw.Mutex, timeout, minHold time.Duration) (*held, error) {
	actx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%w (%v): %w", errTimedOut, timeout, context.DeadlineExceeded))
	defer cancel()
	h := &held{release: make(chan struct{}), result: make(chan error, 1)}
	taken := make(chan context.Context, 1)
	go func() {
		h.result <- lockmw.WithLock(context.WithoutCancel(ctx), m, func(hctx context.Context) error {
			taken <- hctx
			<-h.release
			return nil
		}, lockmw.WithWait(0), lockmw.WithAcquireContext(actx), lockmw.WithMinHold(minHold), releaseRetry)
	}()
	select {
	case h.hold = <-taken:
		return h, nil
	case err := <-h.result:
		return nil, err
	}
}

// Release gives the lock up and returns what the release returned: nil, an
// error matching lockmw.ErrLockLost when the lock was lost, or the Redis
// error (the release is then retried in the background). Called again it
// returns an error matching lockmw.ErrNotHeld.
func (h *held) Release() error {
	first := false
	h.once.Do(func() {
		first = true
		close(h.release)
	})
	if !first {
		return lockmw.ErrNotHeld
	}
	if he, ok := errors.AsType[*lockmw.HoldError](<-h.result); ok {
		return he.Release
	}
	return nil
}

// watchLoss logs, with log, a loss of the hold while it lasts; the returned
// func stops watching.
func (h *held) watchLoss(log func(cause error)) (stop func() bool) {
	hold := h.hold
	return context.AfterFunc(hold, func() {
		if cause := context.Cause(hold); errors.Is(cause, lockmw.ErrLockLost) || errors.Is(cause, lockmw.ErrClosed) {
			log(cause)
		}
	})
}
