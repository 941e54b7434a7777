package lockmw

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A release's context: Unlock runs detached from the hold context it is
// given (which may be cancelled), bounded by the release timeout. Every
// release of a Client is bounded by that same timeout, so the releases that
// begin within one tick share one deadline: the tick's end plus the timeout,
// a context.WithDeadline made once per tick (releaseClock). A release then
// costs no timer of its own; its context (releaseCtx) pairs the shared
// deadline with the hold context's values, which go-redis hooks read (a
// span), and lives in the level it releases.
//
// A tick is a hundredth of the release timeout, at most 10 ms: a release
// gets the release timeout, and at most one tick more.
//
// On a client that does not honour a context's deadline (bounded.go), a
// release still runs on the caller's goroutine when the client's read
// timeout bounds it (an inline release): its deadline is shortened by the
// read timeout, and go-redis checks the context before each attempt (and
// while it waits for a pooled connection or dials), so the last attempt
// starts before the shortened deadline and its read ends within one read
// timeout after it. (A write does not wait: one request at a time leaves the
// socket's send buffer empty.) This spares Unlock a goroutine per call,
// which costs a thread wake-up on a machine whose cores idle. When the
// release timeout is not longer than the read timeout, or the read timeout
// is unknown, only a goroutine (within) bounds a release.

// maxReleaseTick is the longest tick of a releaseClock.
const maxReleaseTick = 10 * time.Millisecond

// releaseClock hands out the shared deadlines of a Client's releases.
type releaseClock struct {
	timeout time.Duration
	tick    time.Duration
	base    time.Time     // ticks count from here (monotonic)
	inline  time.Duration // > 0: an inline release's deadline is shortened by it

	cur atomic.Pointer[releaseTick]
	mu  sync.Mutex // makes a new tick's contexts, one caller at a time
}

// releaseTick is one tick's deadline contexts.
type releaseTick struct {
	n      int64           // the tick's number since base
	ctx    context.Context // ends at base + (n+1) ticks + timeout
	inline context.Context // ends readBound earlier; nil unless the clock has inline
	// The contexts' cancel funcs, never called: each context ends at its
	// deadline, when its timer fires and frees it.
	cancel, cancelInline context.CancelFunc
}

// newReleaseClock returns the clock of releases bounded by timeout; with
// inline > 0 it also has the deadlines shortened by inline (the client's
// read timeout, when go-redis does not honour a context's deadline).
func newReleaseClock(timeout, inline time.Duration) *releaseClock {
	tick := min(max(timeout/100, time.Microsecond), maxReleaseTick)
	if timeout <= inline {
		inline = 0 // only a goroutine bounds such a release (within)
	}
	return &releaseClock{timeout: timeout, tick: tick, base: time.Now(), inline: inline}
}

// now returns the tick of a release that begins now.
func (k *releaseClock) now() *releaseTick {
	n := int64(time.Since(k.base) / k.tick)
	if t := k.cur.Load(); t != nil && t.n == n {
		return t
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if t := k.cur.Load(); t != nil && t.n >= n { // made meanwhile (or a later one: as good)
		return t
	}
	at := k.base.Add(time.Duration(n+1)*k.tick + k.timeout)
	t := &releaseTick{n: n}
	t.ctx, t.cancel = context.WithDeadline(context.Background(), at)
	if k.inline > 0 {
		t.inline, t.cancelInline = context.WithDeadline(context.Background(), at.Add(-k.inline))
	}
	k.cur.Store(t)
	return t
}

// releaseCtx is a release's context: the deadline, Done and Err of a
// releaseClock's tick, and the values of the hold context it releases,
// detached from its cancellation (context.WithoutCancel: package context
// then finds no cancellable parent through the values, so neither
// context.Cause nor a context derived from it follows the hold context).
type releaseCtx struct {
	context.Context                 // the tick's deadline context
	values          context.Context // context.WithoutCancel of the hold context
}

// Value is the hold context's value of key.
func (r *releaseCtx) Value(key any) any { return r.values.Value(key) }

// AfterFunc lets a context derived from r (WithCancel, WithDeadline)
// follow r's end without a goroutine of its own.
func (r *releaseCtx) AfterFunc(f func()) (stop func() bool) {
	return context.AfterFunc(r.Context, f)
}

// releaseContext returns the context of a release of lvl, whose hold
// context is hold: the level's own for its first release (no allocation
// but the detached values), a new one for a retry, for the first may still
// be read by a round trip its caller gave up on. inline says the release
// runs on the caller's goroutine on a client that does not honour context
// deadlines (an inline release): the deadline is then shortened by the
// read timeout. lvl.mu is held.
func (c *Client) releaseContext(lvl *level, hold context.Context, inline bool) context.Context {
	t := c.releases.now()
	dl := t.ctx
	if inline {
		dl = t.inline
	}
	r := &lvl.rctx
	if lvl.rctxUsed {
		r = new(releaseCtx)
	}
	lvl.rctxUsed = true
	*r = releaseCtx{Context: dl, values: context.WithoutCancel(hold)}
	return r
}
