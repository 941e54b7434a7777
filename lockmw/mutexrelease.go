package lockmw

import (
	"context"
	"time"

	"github.com/go-rlock/rlock/lockmw/internal/scripts"
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
	return m.e.release(ctx, expireMS)
}

// releaseOnce runs the release of lvl (kindOps): the short script first for
// an uncontended last level, release.lua otherwise (singleStore.release), or
// the quorum's. A retry of Unlock reuses the level's latch, so a late one
// cannot count twice.
func (m *Mutex) releaseOnce(ctx context.Context, lvl *level, expireMS int64, last bool) (released, error) {
	n, err := m.c.store.release(ctx, m, releaseReq{h: lvl.h, lvl: lvl, expireMS: expireMS, last: last})
	if err != nil {
		return 0, err
	}
	return releasedOf(n), nil
}

// releasedOf decodes the reply of a release script (release.lua,
// rwrelease.lua, the quorum's): levels left, the hold released or left to
// expire, or the field gone.
func releasedOf(n int64) released {
	switch n {
	case scripts.ReleaseLevelsLeft:
		return releasedLevel
	case scripts.ReleaseReleased, scripts.ReleaseToExpire:
		return releasedHold
	}
	return releasedGone
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
