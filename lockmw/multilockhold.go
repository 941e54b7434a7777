package lockmw

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A multiHold is one hold of a multi-lock: every member's hold, kept so that
// Unlock releases each with the context it returned.
type multiHold struct {
	m       *MultiLock
	parent  *multiHold // the next multi-lock hold out in the context chain
	caller  context.Context
	members []memberHold // in the order taken
	hooked  bool         // HoldStart reported it (a re-entry is not reported)
	hookCtx context.Context
	cancel  context.CancelCauseFunc
	start   time.Time

	mu    sync.Mutex
	ended bool // the hold context was cancelled: Unlock, or a member's loss

	relMu sync.Mutex // one Unlock at a time; guards members' released and done
	done  bool       // every member was released
}

// multiKey is the context key of the innermost multi-lock hold a context
// carries.
type multiKey struct{}

// findHold returns the innermost hold of m (or of a MultiLock with the same
// members) that ctx carries, or nil.
func (m *MultiLock) findHold(ctx context.Context) *multiHold {
	mh, _ := ctx.Value(multiKey{}).(*multiHold)
	for ; mh != nil; mh = mh.parent {
		if mh.m == m || mh.m.sameMembers(m) {
			return mh
		}
	}
	return nil
}

// sameMembers reports whether m and o have one Client and the same members.
func (m *MultiLock) sameMembers(o *MultiLock) bool {
	if m.c != o.c || len(m.members) != len(o.members) {
		return false
	}
	for i := range m.members {
		if !sameLocker(m.members[i], o.members[i]) {
			return false
		}
	}
	return true
}

// startHold makes the hold context of the members held (ev: the
// acquisition's, nil without hooks): the caller's context with every
// member's level, cancelled when a member's hold ends without Unlock, with
// the earliest member deadline (their leases).
func (m *MultiLock) startHold(ctx context.Context, held []memberHold, lease time.Duration, ev *AcquireEndEvent) context.Context {
	mh := &multiHold{m: m, caller: ctx, members: held, start: time.Now()}
	mh.parent, _ = ctx.Value(multiKey{}).(*multiHold)
	base := context.Context(levelsCtx{Context: ctx, levels: held[len(held)-1].hold})
	mh.hookCtx = base
	if f := m.c.opts.hooks.HoldStart; f != nil && m.findHold(ctx) == nil {
		mh.hooked = true
		waited := ev != nil && ev.Waited
		if x := f(base, HoldStartEvent{LockInfo: m.info(), Lease: lease, Waited: waited}); x != nil {
			mh.hookCtx = x
		}
	}
	hctx, cancel := context.WithCancelCause(mh.hookCtx)
	mh.cancel = cancel
	if dl, ok := earliestMemberDeadline(held); ok {
		if cdl, ok := ctx.Deadline(); !ok || dl.Before(cdl) {
			var stop context.CancelFunc
			hctx, stop = context.WithDeadline(hctx, dl)
			mh.cancel = func(cause error) { cancel(cause); stop() }
		}
	}
	for i := range held {
		mem := &held[i]
		mem.stop = context.AfterFunc(mem.hold, func() { mh.memberEnded(mem.hold) })
	}
	return context.WithValue(hctx, multiKey{}, mh)
}

// earliestMemberDeadline is the earliest deadline of the members' hold
// contexts: their lease ends (or the caller's deadline).
func earliestMemberDeadline(held []memberHold) (time.Time, bool) {
	var dl time.Time
	for _, h := range held {
		if d, ok := h.hold.Deadline(); ok && (dl.IsZero() || d.Before(dl)) {
			dl = d
		}
	}
	return dl, !dl.IsZero()
}

// memberEnded runs when a member's hold context is done: when the member's
// hold was lost or its Client closed (and not because the caller's context
// ended with that cause), the multi-lock's hold ends with that cause. A
// lease's end is the hold context's own deadline.
func (mh *multiHold) memberEnded(hold context.Context) {
	cause := context.Cause(hold)
	if !errors.Is(cause, ErrLockLost) && !errors.Is(cause, ErrClosed) {
		return
	}
	if errors.Is(context.Cause(mh.caller), cause) {
		return
	}
	mh.end(cause)
}

// end cancels the hold context, once, and reports HoldEnd (lost: the
// cause; nil when released).
func (mh *multiHold) end(lost error) {
	mh.mu.Lock()
	if mh.ended {
		mh.mu.Unlock()
		return
	}
	mh.ended = true
	mh.mu.Unlock()
	c := mh.m.c
	mh.cancel(lost)
	if lost != nil && !errors.Is(lost, ErrClosed) {
		c.log.Warn("lockmw: multi-lock lost", "name", mh.m.name, "cause", lost)
	}
	if f := c.opts.hooks.HoldEnd; f != nil && mh.hooked {
		f(mh.hookCtx, HoldEndEvent{LockInfo: mh.m.info(), Duration: time.Since(mh.start), Lost: lost})
	}
}

// Unlock releases every member of the hold that hold carries, the last
// taken first, each with the hold context its TryLock returned; the hold
// context ends. It returns the members' errors joined: one matching
// [ErrLockLost] when a member was lost, a Redis error when a member's
// release failed (then Unlock may be called again: it releases only the
// members still held). It returns ErrNotHeld when hold carries no hold of
// m, or one already released.
func (m *MultiLock) Unlock(hold context.Context) error {
	return m.release(hold, time.Time{})
}

// UnlockAt gives the hold that hold carries up at at, for [WithMinHold]:
// each member of this package is given up with its own UnlockAt (it stops
// renewing now and expires at at); a member of another package is kept
// until at (UnlockAt sleeps that long), then released. The hold context
// ends now.
func (m *MultiLock) UnlockAt(hold context.Context, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	return m.release(hold, at)
}

// release releases the members still held, now (at zero) or at at.
func (m *MultiLock) release(hold context.Context, at time.Time) error {
	if m.err != nil {
		return m.err
	}
	mh := m.findHold(hold)
	if mh == nil {
		return ErrNotHeld
	}
	mh.relMu.Lock()
	defer mh.relMu.Unlock()
	if mh.done {
		return ErrNotHeld
	}
	for _, mem := range mh.members {
		mem.stop()
	}
	errs := mh.releaseMembers(at)
	var lost error
	for _, err := range errs {
		if errors.Is(err, ErrLockLost) {
			lost = err
			break
		}
	}
	mh.end(lost) // a loss already reported keeps its cause
	return errors.Join(errs...)
}

// releaseMembers releases the members still held, the last taken first,
// and returns their errors (mh.relMu held). A member released, found lost or
// no longer held is done; one whose release failed is kept for another
// Unlock.
func (mh *multiHold) releaseMembers(at time.Time) []error {
	var errs []error
	later := false
	for i := len(mh.members) - 1; i >= 0; i-- {
		mem := &mh.members[i]
		if mem.released {
			continue
		}
		var err error
		own, ok := mem.l.(ownLocker)
		switch {
		case at.IsZero():
			err = mem.l.Unlock(mem.hold)
		case ok:
			err = own.UnlockAt(mem.hold, at)
		default:
			later = true
			continue
		}
		mh.record(mem, err, &errs)
	}
	if later { // another package's members: kept until at
		time.Sleep(time.Until(at))
		for i := len(mh.members) - 1; i >= 0; i-- {
			if mem := &mh.members[i]; !mem.released {
				mh.record(mem, mem.l.Unlock(mem.hold), &errs)
			}
		}
	}
	mh.done = true
	for _, mem := range mh.members {
		mh.done = mh.done && mem.released
	}
	return errs
}

// record notes a member's release: done unless it failed for Redis.
func (mh *multiHold) record(mem *memberHold, err error, errs *[]error) {
	if err == nil || errors.Is(err, ErrLockLost) || errors.Is(err, ErrNotHeld) {
		mem.released = true
	}
	if err != nil {
		*errs = append(*errs, err)
	}
}
