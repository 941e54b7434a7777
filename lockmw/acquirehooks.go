package lockmw

import (
	"context"
	"errors"
	"time"
)

// tryLockHooked is TryLock's work (a re-entry of outer, or a new
// acquisition; lead marks a campaign of Lead) between the AcquireStart and
// AcquireEnd hooks.
func (m *Mutex) tryLockHooked(ctx context.Context, outer *level, wait, lease time.Duration, lead bool) (context.Context, error) {
	hooks := &m.c.opts.hooks
	start := time.Now()
	actx := ctx
	if hooks.AcquireStart != nil {
		if x := hooks.AcquireStart(ctx, AcquireStartEvent{Name: m.name, Group: m.group, Reentrant: outer != nil, Wait: wait, Lease: lease, Lead: lead}); x != nil {
			actx = x
		}
	}
	ev := AcquireEndEvent{Name: m.name, Group: m.group, Reentrant: outer != nil, Lead: lead}
	var hctx context.Context
	var err error
	if outer != nil {
		hctx, err = m.reenter(ctx, outer)
	} else {
		hctx, err = m.acquire(ctx, wait, lease, &ev, lead)
	}
	if hooks.AcquireEnd != nil {
		ev.Duration = time.Since(start)
		ev.Err = err
		ev.Outcome = outcomeOf(err)
		if err == nil {
			ev.Token, _ = m.Token(hctx)
		}
		hooks.AcquireEnd(actx, ev)
	}
	return hctx, err
}

// outcomeOf is the Outcome that AcquireEnd reports for TryLock's error.
func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Acquired
	case errors.Is(err, context.Canceled), errors.Is(err, ErrClosed):
		return Canceled
	case errors.Is(err, ErrNotAcquired), errors.Is(err, context.DeadlineExceeded):
		return TimedOut
	default:
		return Failed
	}
}
