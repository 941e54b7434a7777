package rpclock

import (
	"context"

	"github.com/go-rlock/rlock/internal/skip"
	"github.com/go-rlock/rlock/lockmw"
)

// Hold is a call's hold of its lock, from Acquire to Release.
type Hold struct {
	ctx context.Context
	l   lockmw.Locker
}

// Acquire takes the lock called name in group for a call whose context is
// ctx, waiting up to Settings.Wait and never past ctx's end, with
// Settings.Lease. When it is not taken, the refusal says why: Aborted with a
// retry delay (busy), DeadlineExceeded or Canceled (ctx ended first),
// InvalidArgument (a name the lock cannot use), Unavailable (Redis failed,
// or the Client is closed). A waiter whose ctx ends leaves the queue at once
// (lockmw's TryLock). Each refusal is reported to the Client's Skip hooks,
// with the reason of lockmw's error: busy, refused or error.
func (c *Core) Acquire(ctx context.Context, name, group string) (*Hold, *Refusal) {
	l := c.locker(name, group)
	hctx, err := l.TryLock(ctx, c.s.Wait, c.s.Lease)
	if err != nil {
		skip.Locked(ctx, c.c, l, lockmw.SkipReasonOf(err), err)
		return nil, c.refuse(ctx, l, err)
	}
	return &Hold{ctx: hctx, l: l}, nil
}

// Context is the hold context: the call's context, cancelled with cause
// lockmw.ErrLockLost when the lock is lost (lockmw.ErrClosed when the
// Client is closed); with a lease it has a deadline at the lease end.
func (h *Hold) Context() context.Context { return h.ctx }

// Lost is the refusal of a call whose lock was lost (Aborted) or whose
// Client was closed (Unavailable) while it ran; nil while the lock is held.
// A stream answers its sends and receives with it.
func (h *Hold) Lost() *Refusal { return Lost(h.ctx) }

// Lost is Hold.Lost for the hold context hold (a Do's fn gets it); nil for
// a context that holds no lock.
func Lost(hold context.Context) *Refusal { return lost(hold, nil) }

// Release gives the lock back, and returns Lost's refusal, or Aborted when
// releasing found the lock lost (a lease the call outlived): the call must
// end with it whatever its handler returned, because another call may have
// run beside it. A release that fails for a Redis error is not the caller's
// concern (the lock expires; the Client's hooks report it): nil.
func (h *Hold) Release() *Refusal {
	return lost(h.ctx, h.l.Unlock(h.ctx))
}

// Do runs fn under the lock called name in group (see Acquire), with the
// hold context, and releases the lock when fn returns or panics (the panic
// goes on). The error is the refusal when the lock was not taken (fn did not
// run) or was lost while fn ran (Release), else fn's error. name "" runs fn
// unlocked, with ctx.
func (c *Core) Do(ctx context.Context, name, group string, fn func(ctx context.Context) error) error {
	if name == "" {
		return fn(ctx)
	}
	h, r := c.Acquire(ctx, name, group)
	if r != nil {
		return r
	}
	released := false
	defer func() {
		if !released { // fn panicked
			h.Release()
		}
	}()
	err := fn(h.ctx)
	released = true
	if r := h.Release(); r != nil {
		return r
	}
	return err
}
