package lockmw

import (
	"context"
	"fmt"
	"time"
)

// Unlock releases the level of the lock that the hold context hold was
// returned for (by Lock or TryLock; or any context derived from that one).
// The last level deletes the key, hands the lock to the next queued waiter
// (or publishes Redisson's unlock message), stops renewal and cancels the
// hold context.
//
// It works with a cancelled hold: it takes the owner from hold and runs the
// release detached from it, bounded by the release timeout. It returns
// ErrNotHeld when hold carries no unreleased level of this lock, ErrLockLost when
// the hold was lost (then nothing in Redis is touched) or when Redis no longer
// has it, or the Redis error. After a Redis error the level stays held and
// Unlock may be called again (a retry cannot count twice); if it was the
// owner's last level, renewal stops and the hold context ends, so that the
// lock expires within the watchdog timeout even without a retry.
func (m *Mutex) Unlock(hold context.Context) error {
	return m.release(hold, 0)
}

// UnlockAt gives the lock of the hold context hold up at at: renewal stops
// now and the key expires at at (at once when at has passed). On an inner
// re-entry level it is a plain Unlock. The hold context is cancelled now, and
// the lock stays owned until it expires: even this Client cannot take it
// again before.
func (m *Mutex) UnlockAt(hold context.Context, at time.Time) error {
	return m.release(hold, expireIn(at))
}

// release releases the level ctx carries; with expireMS > 0 the last level
// lets the key expire in that many ms (UnlockAt).
func (m *Mutex) release(ctx context.Context, expireMS int64) error {
	if m.err != nil {
		return m.err
	}
	lvl, err := m.levelToRelease(ctx)
	if err != nil {
		return err
	}
	defer lvl.mu.Unlock()
	h, c := lvl.h, m.c
	if lvl.latchArg == nil {
		lvl.latchArg = m.k.latchBase + lvl.reqID
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.releaseTimeout)
	defer cancel()
	h.beginRelease()
	defer h.endRelease()
	// The local count of levels decides the last one: Redis may count one
	// more while a re-entry whose reply was lost waits to be undone.
	last := h.addLevels(0) == 1
	n, err := m.releaseWithin(rctx, releaseReq{h: h, lvl: lvl, expireMS: expireMS, last: last})
	if err != nil {
		if h.addLevels(0) == 1 {
			// The owner's last level: stop renewing, so that the lock
			// expires within the watchdog timeout even if Unlock is never
			// called again. A retry still releases it at once.
			h.end(endReleased, nil)
		}
		return withCtxErr(rctx, fmt.Errorf("lockmw: unlock %q: %w", m.name, err))
	}
	lvl.released = true
	h.addLevels(-1)
	switch n {
	case 0: // other levels remain
		lvl.cancelLevel(nil)
		return nil
	case 1, 2:
		h.end(endReleased, nil)
		lvl.cancelLevel(nil)
		return nil
	default:
		cause := fmt.Errorf("%w: %q was gone or someone else's at unlock", ErrLockLost, m.name)
		h.end(endLost, cause)
		lvl.cancelLevel(cause)
		return cause
	}
}

// cancelLevel cancels a re-entry's own context with cause.
func (l *level) cancelLevel(cause error) {
	if l.cancel != nil {
		l.cancel(cause)
	}
}

// ForceUnlock deletes the lock whoever holds it, hands it to the next queued
// waiter (or publishes Redisson's unlock message) and reports whether a lock
// existed. A holder renewed by the watchdog learns of it at its next renewal:
// its hold context is cancelled with ErrLockLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	ok, err := bounded(m.c, ctx, func(ctx context.Context) (bool, error) {
		return m.c.store.forceUnlock(ctx, m)
	}, nil)
	return ok, withCtxErr(ctx, err)
}

// releaseWithin runs the release r, bounded by ctx (the release timeout): a
// retry of Unlock reuses the level's latch, so a late one cannot count twice.
func (m *Mutex) releaseWithin(ctx context.Context, r releaseReq) (int64, error) {
	return boundedInline(m.c, ctx, func(ctx context.Context) (int64, error) {
		return m.c.store.release(ctx, m, r)
	})
}
