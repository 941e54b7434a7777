package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-rlock/rlock/lockmw"
)

// The states of an attempt.
const (
	attemptPending   int32 = iota // TryLock is under way
	attemptTaken                  // TryLock returned in time; the caller has the result
	attemptAbandoned              // the caller gave up (timeout or its context)
)

// An attempt is one TryLock(ctx, 0, 0) run on its own goroutine, so that the
// caller can give up after the lock timeout whatever Redis does.
//
// It is also the context passed to TryLock, and so the parent of the hold
// context: lockmw derives the hold context from the context the lock is taken
// with. While the attempt is pending that context reports the attempt's
// deadline, which go-redis (with ContextTimeoutEnabled) turns into socket
// deadlines, and it is cancelled when the caller gives up. Once the attempt is
// taken it has no deadline and is never cancelled by us until the hold ends,
// so the hold context ends only when the hold does, with lockmw's cause
// (ErrLockLost, ErrClosed): a plain context.WithTimeout would cancel the hold
// context at the timeout and hide a later loss.
//
// The embedded context is a *cancelCtx's, so the contexts lockmw derives from
// an attempt attach to it directly, without a goroutine.
type attempt struct {
	context.Context                         // cancelled by the caller giving up
	cancel          context.CancelCauseFunc // cancels the embedded context
	deadline        time.Time
	state           atomic.Int32
	result          chan attemptResult // buffered: the goroutine's answer once taken
}

type attemptResult struct {
	hold context.Context
	err  error
}

// Deadline reports the attempt's deadline while it is pending or abandoned,
// and none once taken.
func (a *attempt) Deadline() (time.Time, bool) {
	if a.state.Load() == attemptTaken {
		return a.Context.Deadline()
	}
	return a.deadline, true
}

// errTimedOut is the cause of an attempt abandoned at its timeout.
var errTimedOut = errors.New("no reply within the lock timeout")

// tryOnce makes one attempt to take m with the watchdog (wait 0, lease 0). It
// returns when TryLock does, when timeout has passed or when ctx ends,
// whichever comes first; an abandoned attempt finishes in the background (its
// I/O bounded by the same deadline, plus lockmw's clean-up bounded by the
// release timeout) and gives back a lock it won late.
//
// The hold context derives from base, not from ctx: base gives it its values
// only. On success, end must be called once the hold is over (after Unlock).
func tryOnce(ctx, base context.Context, m *lockmw.Mutex, timeout time.Duration) (hold context.Context, end func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, ctxErr(ctx)
	}
	actx, cancel := context.WithCancelCause(context.WithoutCancel(base))
	a := &attempt{
		Context:  actx,
		cancel:   cancel,
		deadline: time.Now().Add(timeout),
		result:   make(chan attemptResult, 1),
	}
	go a.run(m)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var cause error
	select {
	case r := <-a.result:
		return a.finish(r)
	case <-timer.C:
		cause = fmt.Errorf("%w (%v): %w", errTimedOut, timeout, context.DeadlineExceeded)
	case <-ctx.Done():
		cause = ctxErr(ctx)
	}
	if a.state.CompareAndSwap(attemptPending, attemptAbandoned) {
		a.cancel(cause)
		return nil, nil, cause
	}
	return a.finish(<-a.result) // TryLock returned just in time
}

// run calls TryLock and hands the result to the caller, or gives a lock won
// after the caller gave up back.
func (a *attempt) run(m *lockmw.Mutex) {
	hold, err := m.TryLock(a, 0, 0)
	if a.state.CompareAndSwap(attemptPending, attemptTaken) {
		a.result <- attemptResult{hold, err}
		return
	}
	if err == nil {
		_ = m.Unlock(hold) // nobody will run under it
	}
	a.cancel(nil)
}

func (a *attempt) finish(r attemptResult) (context.Context, func(), error) {
	if r.err != nil {
		a.cancel(nil)
		return nil, nil, r.err
	}
	return r.hold, func() { a.cancel(nil) }, nil
}

// ctxErr is ctx's error joined with its cause when that says more.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return errors.Join(err, cause)
	}
	return err
}

// classify turns an error of tryOnce into the adapter's: a busy lock keeps
// matching lockmw.ErrNotAcquired; Redis failures and timeouts match
// ErrUnavailable and never ErrNotAcquired; bad names, a closed client and
// the caller's context errors are wrapped as they are.
func classify(what string, err error) error {
	var busy *lockmw.BusyError
	switch {
	case errors.As(err, &busy):
		return fmt.Errorf("scheduler: %s: %w", what, err)
	case errors.Is(err, errTimedOut):
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	case errors.Is(err, lockmw.ErrInvalidName), errors.Is(err, lockmw.ErrClosed),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("scheduler: %s: %w", what, err)
	default:
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	}
}
