package lockmw

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A hold is one ownership of a lock by one owner field: created by a new
// acquisition, shared by its re-entries, ended by the last Unlock, a loss or
// Close.
type hold struct {
	lk       *lockBase
	field    string
	fieldArg any // field, boxed once for the scripts
	token    int64
	lease    time.Duration // 0: renewed by the watchdog
	start    time.Time
	hookCtx  context.Context // what HoldStart returned; handed to HoldEnd and Renewal
	cancel   context.CancelCauseFunc
	stopDL   context.CancelFunc // the lease deadline's, when leased

	mu        sync.Mutex
	state     holdState
	lossTime  *time.Timer // fires when the key could have expired (watchdog holds)
	claimTime *time.Timer // fires when a hold handed over must be claimed (see watch)
	inRelease int         // Unlock calls under way; a renewal that finds the key gone then is no loss
	inRound   bool        // in the renewal round under way (guarded by the renewer's mu)
	levels    int         // levels not yet unlocked (authoritative for a quorum client)

	top level   // the first level: one allocation with the hold
	ctx holdCtx // the hold context of top, returned by Lock

	// The command line of the first release of top (releaseLine).
	line     [lineLen]any
	lineUsed atomic.Bool

	// A write hold of an RWMutex: the read hold its owner took beside it
	// (rwmutex_enter.go), made one at a time under readMu.
	readMu   sync.Mutex
	readHold *hold
}

// holdState is where a hold is in its life.
type holdState int

const (
	holdActive   holdState = iota
	holdReleased           // the last level was unlocked
	holdLost               // renewal found it gone, renewals failed too long, or Unlock found it gone
	holdClosed             // Client.Close: renewal stopped, Unlock still releases
)

// endKind is how a hold ends (see hold.end).
type endKind int

const (
	endReleased endKind = iota
	endLost
	endClosed
)

// A level is one successful Lock or TryLock: the hold's first acquisition or
// one re-entry. The context returned by Lock carries it.
type level struct {
	h        *hold
	parent   *level                  // the next level out in the context chain (any lock)
	cancel   context.CancelCauseFunc // a re-entry's own; nil for the first level, whose context is the hold's
	reqID    string                  // latch of this level's release; fixed so a retried Unlock is idempotent
	latch    string                  // the latch key of reqID (k.latchBase + reqID)
	latchArg any                     // latch, boxed (argOf)
	ran      runNote                 // where a merged run carried its short release (batchmerge.go)
	mu       sync.Mutex
	released bool
	rctx     releaseCtx // the context of the level's first release (releasectx.go)
	rctxUsed bool
}

// lineLen is the room for a release's command line in a hold: "evalsha",
// the hash, the key count, the keys and the arguments of the longest
// release on the hot path (a semaphore's: 7 keys, 5 arguments).
const lineLen = 15

// releaseLine returns an empty command line of capacity n for a release of
// l: for the first release of a hold's first level the hold's own (no
// allocation), else a new one (a retry's: the first may still be read by a
// round trip its caller gave up on, even be built, on within's goroutine).
func (l *level) releaseLine(n int) []any {
	h := l.h
	if l != &h.top || n > lineLen || !h.lineUsed.CompareAndSwap(false, true) {
		return make([]any, 0, n)
	}
	return h.line[:0:n]
}

// levelKey is the context key of the innermost level a context carries.
type levelKey struct{}

// topLevel returns the innermost level ctx carries, of any lock.
func topLevel(ctx context.Context) *level {
	l, _ := ctx.Value(levelKey{}).(*level)
	return l
}

// findLevel returns the innermost level of b's lock (same Client, name and
// kind) that ctx carries, or nil; for a quorum semaphore or read-write
// lock side, the innermost of its quorum mutexes' (lockBase.of).
func (b *lockBase) findLevel(ctx context.Context) *level {
	for l := topLevel(ctx); l != nil; l = l.parent {
		if lk := l.h.lk; lk.same(b) || lk.of != nil && lk.of.same(b) {
			return l
		}
	}
	return nil
}

// levelToRelease returns the level ctx carries of b's lock, locked, for a
// release (the caller unlocks its mu), with its request ID set; ErrNotHeld
// when ctx carries none or it was released, ErrLockLost when its hold was
// lost (then it counts as released: nothing in Redis is touched).
func (b *lockBase) levelToRelease(ctx context.Context) (*level, error) {
	lvl := b.findLevel(ctx)
	if lvl == nil {
		return nil, ErrNotHeld
	}
	lvl.mu.Lock()
	switch {
	case lvl.released:
		lvl.mu.Unlock()
		return nil, ErrNotHeld
	case lvl.h.getState() == holdLost:
		lvl.released = true
		lvl.cancelLevel(ErrLockLost)
		lvl.mu.Unlock()
		return nil, lvl.h.lostErr()
	}
	if lvl.reqID == "" {
		lvl.latch = b.c.latchKey(b.k.latchBase)
		lvl.reqID, lvl.latchArg = lvl.latch[len(b.k.latchBase):], argOf(&lvl.latch)
	}
	return lvl, nil
}

// lostErr is the error of an Unlock that finds its hold lost: the loss's
// cause, which names the lock (a multi-lock's Unlock tells which member), or
// ErrLockLost naming it while the loss is still being reported.
func (h *hold) lostErr() error {
	if cause := context.Cause(&h.ctx); errors.Is(cause, ErrLockLost) {
		return cause
	}
	return fmt.Errorf("%w: %s %q was lost before Unlock", ErrLockLost, h.lk.kind, h.lk.info().Name)
}

// expireIn is UnlockAt's at in ms from now, rounded up; 0 when it has passed
// (release now).
func expireIn(at time.Time) int64 {
	d := time.Until(at)
	if d <= 0 {
		return 0
	}
	return msCeil(d)
}

// state returns the hold's state.
func (h *hold) getState() holdState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// end moves an active hold to its final state, once: cancels the hold
// context, stops renewal and reports HoldEnd. A closed hold can still be
// released (Unlock after Close) but reports nothing more.
func (h *hold) end(kind endKind, cause error) bool {
	h.mu.Lock()
	prev := h.state
	switch {
	case prev == holdActive:
	case prev == holdClosed && kind == endReleased,
		prev == holdReleased && kind == endReleased: // released after a failed Unlock
		h.state = holdReleased
		h.mu.Unlock()
		h.lk.c.removeHold(h)
		return true
	default:
		h.mu.Unlock()
		return false
	}
	switch kind {
	case endReleased:
		h.state = holdReleased
	case endLost:
		h.state = holdLost
	case endClosed:
		h.state = holdClosed
	}
	if h.lossTime != nil {
		h.lossTime.Stop()
	}
	if h.claimTime != nil {
		h.claimTime.Stop()
	}
	h.mu.Unlock()

	c := h.lk.c
	if h.lease == 0 {
		c.renewer.remove(h)
	}
	if kind != endClosed {
		c.removeHold(h)
	}
	if kind == endReleased {
		h.cancel(nil)
	} else {
		h.cancel(cause)
	}
	if h.stopDL != nil {
		h.stopDL()
	}
	if kind == endLost {
		c.log.Warn("lockmw: lock lost", "name", h.lk.name, "field", h.field, "cause", cause)
	}
	if f := c.opts.hooks.HoldEnd; f != nil {
		ev := HoldEndEvent{LockInfo: h.lk.info(), Duration: time.Since(h.start)}
		if kind != endReleased {
			ev.Lost = cause
		}
		f(h.hookCtx, ev)
	}
	return true
}

// addLevels adds d to the level count and returns the count before.
func (h *hold) addLevels(d int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.levels
	h.levels += d
	return n
}

// releasing reports whether an Unlock of the hold is under way.
func (h *hold) releasing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inRelease > 0
}

// beginRelease marks an Unlock of the hold as under way.
func (h *hold) beginRelease() {
	h.mu.Lock()
	h.inRelease++
	h.mu.Unlock()
}

// endRelease marks an Unlock of the hold as done.
func (h *hold) endRelease() {
	h.mu.Lock()
	h.inRelease--
	h.mu.Unlock()
}

// renewed records a successful renewal sent at sent: the key cannot expire
// before sent + timeout.
func (h *hold) renewed(sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == holdActive && h.lossTime != nil {
		h.lossTime.Reset(time.Until(h.lk.c.expiryBound(sent, h.lk.c.opts.watchdog)))
	}
}

// newHold returns the hold-to-be of a new acquisition, made before its
// first attempt so that the owner field lives in it: one allocation whether
// it wins or not. Its field and its first level's latch key (a new request
// ID) are one string. (The attempt's RESTORE line is pooled: mutexfastpath.go.)
func (b *lockBase) newHold() *hold {
	c := b.c
	var buf [192]byte
	s := append(append(buf[:0], c.id...), ':')
	s = strconv.AppendUint(s, c.ownerSeq.Add(1), 10)
	n := len(s)
	s = append(append(append(s, b.k.latchBase...), c.nonce...), ':')
	both := string(strconv.AppendUint(s, c.reqSeq.Add(1), 10))
	h := &hold{field: both[:n]}
	h.top.latch = both[n:]
	h.top.reqID = h.top.latch[len(b.k.latchBase):]
	return h
}

// startHold creates the hold of a new acquisition a, won with t (waited
// says after a wait). A non-zero t.claimBy says the hold was handed over and
// not claimed yet: it is lost then unless the renewer's claim succeeds
// first. A non-nil t.lk is the lock the hold is of (a quorum semaphore's
// permit, a quorum read-write side's mutex) instead of b.
func (b *lockBase) startHold(ctx context.Context, a attempt, lease time.Duration, t turn, waited bool) context.Context {
	if t.lk != nil {
		b = t.lk
	}
	c := b.c
	h := a.h
	if h == nil {
		h = &hold{field: a.field}
	}
	h.lk, h.fieldArg, h.token, h.lease, h.start, h.levels = b, argOf(&h.field), t.token, lease, time.Now(), 1
	h.hookCtx = ctx
	if f := c.opts.hooks.HoldStart; f != nil {
		if x := f(ctx, HoldStartEvent{LockInfo: b.info(), Field: a.field, Token: t.token, Lease: lease, Waited: waited, Lead: a.lead}); x != nil {
			h.hookCtx = x
		}
	}
	hctx, cancel := context.WithCancelCause(h.hookCtx)
	h.cancel = cancel
	if lease > 0 {
		hctx, h.stopDL = context.WithDeadline(hctx, c.expiryBound(t.base, lease))
	}
	h.top.h, h.top.parent = h, topLevel(ctx) // its latch is newHold's, when it made h
	if h.top.latch != "" {
		h.top.latchArg = argOf(&h.top.latch)
	}
	h.ctx = holdCtx{Context: hctx, top: &h.top}
	c.addHold(h)
	if lease == 0 {
		h.watch(t)
	}
	if f := c.opts.hooks.Metadata; f != nil {
		if s := f(h.hookCtx, b.info().Name); s != "" && len(s) <= MaxMetadataLen {
			c.renewer.setMeta(h, s)
		}
	}
	if c.isClosed() { // Close ran while we acquired
		h.end(endClosed, ErrClosed)
	}
	return &h.ctx
}

// holdCtx is the context a new hold's Lock returns: the hold's cancellable
// context, carrying the hold's first level (levelKey). It lives in the hold,
// so it costs no allocation of its own (context.WithValue would).
type holdCtx struct {
	context.Context // WithCancelCause(hookCtx), or the lease's WithDeadline of that
	top             *level
}

func (c *holdCtx) Value(key any) any {
	if key == (levelKey{}) {
		return c.top
	}
	return c.Context.Value(key)
}

// watch hands a watchdog hold won with t to the renewer, with a timer that
// ends it as lost when the key could have expired unrenewed.
//
// A hold handed over (t.claimBy set) is claimed, given its full TTL by a
// renewal, when two thirds of its claim window are left (the margin of
// every renewal): a hold released before then is never claimed, which
// spares a short hold under contention one round trip.
func (h *hold) watch(t turn) {
	c := h.lk.c
	c.renewer.add(h) // first: a claim of a hold the renewer lacks is dropped
	lossAt := c.expiryBound(t.base, c.opts.watchdog)
	if !t.claimBy.IsZero() {
		lossAt = t.claimBy
	}
	h.mu.Lock()
	h.lossTime = time.AfterFunc(time.Until(lossAt), func() {
		h.end(endLost, fmt.Errorf("%w: renewals of %q failed until the key could have expired", ErrLockLost, h.lk.name))
	})
	if !t.claimBy.IsZero() {
		window := time.Duration(claimWindow(c.opts.watchdog)) * time.Millisecond
		h.claimTime = time.AfterFunc(time.Until(t.claimBy.Add(-2*window/3)), func() { c.renewer.claimSoon(h) })
	}
	h.mu.Unlock()
}
