package lockmw

import (
	"context"
	"time"
)

// A boundedAttempt is one TryLock run on a goroutine of its own for a call with
// [WithAcquireContext], so that the call can give up when the acquisition
// context ends, whatever Redis does.
//
// It is also the context passed to TryLock, and so the parent of the hold
// context. Its embedded context is the call's context with a cancel of its
// own: it is cancelled when the call gives up, and otherwise only when the
// call's context is, so the hold context ends when the hold does, with
// lockmw's cause (ErrLockLost, ErrClosed). A plain context.WithTimeout would
// cancel the hold context at the acquisition deadline and hide a later loss.
// While the attempt is pending it reports the earlier of the acquisition's
// and the call's deadlines, which go-redis (with ContextTimeoutEnabled) turns
// into socket deadlines; once taken it reports the call's. A leased
// acquisition is not shown the acquisition deadline: the hold context takes
// its lease deadline from its parent while it is being made.
//
// The embedded context is a *cancelCtx's, so the contexts TryLock derives
// from an attempt attach to it directly, without a goroutine.
type boundedAttempt struct {
	context.Context                          // the call's, cancelled by the caller giving up
	cancel          context.CancelCauseFunc  // cancels the embedded context
	deadline        time.Time                // zero: none to report while pending
	result          *handover[attemptResult] // TryLock's answer (bounded.go)
}

type attemptResult struct {
	hold context.Context
	err  error
}

// Deadline reports the attempt's deadline while it is pending or abandoned,
// and the call's once taken.
func (a *boundedAttempt) Deadline() (time.Time, bool) {
	if a.result.taken() || a.deadline.IsZero() {
		return a.Context.Deadline()
	}
	return a.deadline, true
}

// acquireWithin takes m as TryLock(ctx, wait, lease) does, but returns as
// soon as actx or ctx ends, whatever Redis does; an abandoned attempt
// finishes in the background (its I/O bounded by the deadline it reports,
// plus lockmw's clean-up bounded by the release timeout) and gives back a
// lock it won late. On success, end must be called once the hold is over
// (after its release).
func acquireWithin(ctx, actx context.Context, m Locker, wait, lease time.Duration) (hold context.Context, end func(), err error) {
	for _, c := range []context.Context{ctx, actx} {
		if c.Err() != nil {
			return nil, nil, ctxErr(c)
		}
	}
	hctx, cancel := context.WithCancelCause(ctx)
	a := &boundedAttempt{Context: hctx, cancel: cancel, result: newHandover[attemptResult]()}
	if lease == 0 {
		a.deadline = earliestDeadline(ctx, actx)
	}
	go a.run(m, wait, lease)

	var cause error
	select {
	case r := <-a.result.done:
		return a.finish(r)
	case <-actx.Done():
		cause = ctxErr(actx)
	case <-ctx.Done():
		cause = ctxErr(ctx)
	}
	if a.result.giveUp() {
		a.cancel(cause)
		return nil, nil, cause
	}
	return a.finish(a.result.take()) // TryLock returned just in time
}

// run calls TryLock and hands the result to the caller, or gives a lock won
// after the caller gave up back.
func (a *boundedAttempt) run(m Locker, wait, lease time.Duration) {
	hold, err := m.TryLock(a, wait, lease)
	if a.result.offer(attemptResult{hold, err}) {
		return
	}
	if err == nil {
		_ = m.Unlock(hold) // nobody will run under it
	}
	a.cancel(nil)
}

func (a *boundedAttempt) finish(r attemptResult) (context.Context, func(), error) {
	if r.err != nil {
		a.cancel(nil)
		return nil, nil, r.err
	}
	return r.hold, func() { a.cancel(nil) }, nil
}

// earliestDeadline is the earlier of a's and b's deadlines; zero when
// neither has one.
func earliestDeadline(a, b context.Context) time.Time {
	da, okA := a.Deadline()
	db, okB := b.Deadline()
	switch {
	case okA && (!okB || da.Before(db)):
		return da
	case okB:
		return db
	}
	return time.Time{}
}
