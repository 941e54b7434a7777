package lockmw

import (
	"context"
	"math"
	"time"
)

// Forever, as the wait of TryLock, waits until the lock is acquired or the
// context ends.
const Forever time.Duration = math.MaxInt64

// Mutex is a reentrant distributed lock on one name, Redisson's RLock. It is
// safe for concurrent use and cheap to create; mutexes of one Client and name
// are interchangeable (but for the group each reports to the hooks, see
// [WithGroup]). Ownership is not a goroutine but a context: Lock returns
// a hold context, and the hold belongs to whoever has that context (or one
// derived from it). See the package documentation.
type Mutex struct {
	lockBase
	e      engine
	fenced bool
	err    error    // ErrInvalidName, returned by every call
	akeys  []string // the acquire script's keys

	keyArgs []any // akeys, boxed once for the acquire and release command lines
	rollArg any   // k.handoff (the roll-call channel), boxed once for the release command lines
	// gate, for a side of a quorum RWMutex, is the keys of its acquisition's
	// gate (quorumacquire.lua, quorumrw.go); nil for a mutex.
	gate []string
}

// Mutex returns the lock called name, with [WithFencing] and [WithGroup] as
// its options. It never panics: a name that cannot be used (see
// ErrInvalidName) gives a Mutex whose every call returns that error, and a
// nil option is skipped.
func (c *Client) Mutex(name string, opts ...LockOption) *Mutex {
	return c.newMutex(name, newLockOptions(opts), "")
}

// newMutex is Mutex with its options read; a non-empty channel replaces the
// unlock channel (a quorum semaphore's permits share their semaphore's).
func (c *Client) newMutex(name string, o lockOptions, channel string) *Mutex {
	m := &Mutex{lockBase: lockBase{c: c, name: name, kind: kindMutex, group: o.group, adapter: o.adapter}, fenced: o.fencing}
	m.e = engine{&m.lockBase, m}
	if err := validateName(name, c.ns, c.cluster, newKeys); err != nil {
		m.err = err
		return m
	}
	m.k = newKeys(c.ns, name)
	if channel != "" {
		m.k.channel = channel
	}
	m.renewKey = m.k.lock
	m.akeys = []string{m.k.lock, m.k.channel, m.k.queue, m.k.waiters, m.k.token}
	m.keyArgs = []any{m.akeys[0], m.akeys[1], m.akeys[2], m.akeys[3], m.akeys[4]}
	m.rollArg = m.k.handoff
	m.hot = c.contention.slot(name)
	return m
}

// Name returns the lock's name, which is also its Redis key.
func (m *Mutex) Name() string { return m.name }

// Err returns the error every call on the mutex returns when its name cannot
// be used (matching ErrInvalidName), or nil. It checks the name without a
// round trip.
func (m *Mutex) Err() error { return m.err }

// Lock waits until it holds the lock or ctx ends; it is TryLock(ctx, Forever, 0).
func (m *Mutex) Lock(ctx context.Context) (context.Context, error) {
	return m.TryLock(ctx, Forever, 0)
}

// TryLock acquires the lock, waiting at most wait for a busy lock: 0 is a
// single attempt, Forever waits until ctx ends. With lease == 0 the lock's
// TTL is the watchdog timeout and the watchdog renews it every third of that
// until the last Unlock; with lease > 0 the TTL is lease and nothing renews
// it.
//
// On success it returns the hold context: derived from ctx, carrying the hold,
// cancelled when the hold ends (see the package documentation for each cause),
// and with a deadline at the lease end when leased. Passing that context (or
// one derived from it) to TryLock or Lock of a mutex of the same Client and
// name re-enters: the count in Redis goes up, nothing waits, and the outer
// hold's regime (watchdog or lease end) is kept whatever wait and lease say.
//
// The hold context inherits ctx's deadline and cancellation: bound the wait
// with wait, not with a deadline on ctx, when the hold must outlive it.
//
// A wait (wait > 0) rides out transient Redis errors on every attempt, the
// first included: a reset connection, a timeout, a server loading or failing
// over (LOADING, READONLY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN). It retries
// after a back-off of 10ms doubling to 1s (jittered) until the wait or ctx
// ends, and keeps its place in the queue. A single attempt (wait 0) returns
// the error at once.
//
// On failure it returns ctx and an error: a *BusyError (matching
// ErrNotAcquired) when the lock stayed busy for the whole wait, joined with
// ctx's error when ctx ended first; when the last attempts failed, the wait's
// error joined with the last Redis error (matching ErrNotAcquired, without a
// BusyError when no attempt was answered); ErrClosed after Close;
// ErrInvalidName or ErrInvalidArgument for bad input; or the Redis error of
// a single attempt, or one that retrying cannot fix (WRONGTYPE, NOSCRIPT,
// NOAUTH, NOPERM, an unknown command, a closed go-redis client). Nothing is left
// held when it fails: an attempt whose outcome is unknown (a lost reply, a
// waiter leaving as the lock is handed to it) is undone in the background, so
// TryLock returns when ctx ends even if Redis does not answer.
func (m *Mutex) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return m.tryLock(ctx, wait, lease, false)
}

// tryLock is TryLock; lead marks a campaign of Lead in the hooks' events
// (an argument, not a context value, so that a lock taken with the term's
// context is not marked).
func (m *Mutex) tryLock(ctx context.Context, wait, lease time.Duration, lead bool) (context.Context, error) {
	if m.err != nil {
		return ctx, m.err
	}
	return m.e.tryLock(ctx, wait, lease, lead)
}

// Token returns the fencing token of the hold of this lock that the hold
// context hold carries, with no round trip; false when hold carries none or
// the mutex was made without WithFencing. A re-entry has the token of the
// hold it re-entered.
func (m *Mutex) Token(hold context.Context) (int64, bool) {
	if m.err != nil || !m.fenced {
		return 0, false
	}
	lvl := m.findLevel(hold)
	if lvl == nil || lvl.h.token == 0 {
		return 0, false
	}
	return lvl.h.token, true
}
