package lockmw

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-rlock/rlock/internal/layout"
)

// ErrUpgrade reports Lock or TryLock of an RWMutex through a context that
// holds its read side and not its write side. A reader cannot become the
// writer: it would wait for itself (Redisson's RReadWriteLock waits for ever
// there); release the read side first. It matches ErrInvalidArgument too.
var ErrUpgrade error = upgradeError{}

// upgradeError is ErrUpgrade's type: it matches ErrInvalidArgument too.
type upgradeError struct{}

func (upgradeError) Error() string {
	return "lockmw: a reader cannot take the write side of its read-write lock"
}

func (upgradeError) Is(target error) bool { return target == ErrInvalidArgument }

// RWMutex is Redisson's RReadWriteLock: many readers or one writer on one
// name, across every Client and process, and Redisson's own clients.
//
// Both sides are reentrant as a Mutex is: RLock with a hold context of the
// read side adds a level, Lock with one of the write side too. The writer
// may take the read side (RLock with its write hold context): that read
// hold is its own, outlives an Unlock of the write side (a downgrade, as in
// Redisson) and ends with RUnlock. A reader may not take the write side:
// Lock with a read hold context returns ErrUpgrade at once.
//
// Waiting is the mutex's (no polling: a queue and a hand-off), with one
// rule between the sides: a reader does not join readers that hold while a
// writer waits in the queue before it, and a release hands the lock to the
// head of the queue, a writer alone or every reader queued before the next
// writer at once. So among rlock clients no writer starves behind a stream
// of readers and no reader behind writers. Redisson's readers know nothing of
// the queue and join whenever the mode is read: the promise does not cover
// them. See docs/rwmutex.md.
//
// An RWMutex is a Locker for its write side; RLocker is the read side. The
// holds are renewed by the Client's watchdog (a reader's level keys too),
// and each hold context ends when its hold is lost. WithFencing gives the
// write side fencing tokens (Token). It is cheap to create; RWMutexes of one
// Client and name are interchangeable. A name is one kind of lock: a
// Mutex, a Semaphore or an RWMutex.
//
// On a quorum Client (NewQuorum) each side holds on majorities of the
// masters, and each master decides between the sides atomically: the write
// side is the quorum mutex of the name, each read hold a quorum mutex of its
// own that the writer's acquisition finds registered there
// (docs/topologies.md). Readers share and a writer excludes, as on one
// Redis, and the writer takes the read side as there; waiters are woken by
// any release (a quorum has no queue, no hand-off and no preference between
// the sides).
type RWMutex struct {
	r, w *rwSide
}

// rwSide is one side of an RWMutex: a lock kind of its own (kindOps in
// rwmutex_ops.go) on the RWMutex's keys.
type rwSide struct {
	lockBase
	e      engine
	peer   *rwSide // the other side
	err    error
	single *singleStore
	fenced bool
	akeys  []string // the acquire script's keys
}

// RWMutex returns the read-write lock called name, with [WithFencing] (the
// write side's tokens) and [WithGroup] as its options. It never panics: a
// name that cannot be used gives an RWMutex whose every call returns
// ErrInvalidName (Err); a nil option is skipped. On a quorum Client
// (NewQuorum) its sides hold on majorities of the masters (quorumrw.go,
// docs/topologies.md).
func (c *Client) RWMutex(name string, opts ...LockOption) *RWMutex {
	o := newLockOptions(opts)
	rw := &RWMutex{
		r: &rwSide{lockBase: lockBase{c: c, name: name, kind: kindRead, group: o.group, adapter: o.adapter}},
		w: &rwSide{lockBase: lockBase{c: c, name: name, kind: kindWrite, group: o.group, adapter: o.adapter, suffix: ":write"}, fenced: o.fencing},
	}
	rw.r.peer, rw.w.peer = rw.w, rw.r
	rw.r.writer = &rw.w.lockBase
	single, ok := c.store.(*singleStore)
	err := validateName(name, c.ns, c.cluster, newRWKeys)
	if !ok {
		if err == nil { // the longest of its keys' names: a reader's
			err = validateName(layout.QuorumReader(name, c.id+":"+strconv.FormatUint(math.MaxUint64, 10)), c.ns, c.cluster, newKeys)
		}
		for _, s := range []*rwSide{rw.r, rw.w} {
			s.err = err
			s.e = engine{&s.lockBase, s}
		}
		if err == nil {
			newQuorumRW(rw, c.store.(*quorumStore), o.fencing)
		}
		return rw
	}
	for _, s := range []*rwSide{rw.r, rw.w} {
		s.e = engine{&s.lockBase, s}
		if s.err = err; err != nil {
			continue
		}
		s.single = single
		s.k = newRWKeys(c.ns, name)
		s.renewKey = s.k.lock
		s.akeys = []string{s.k.lock, s.k.channel, s.k.queue, s.k.waiters, s.k.token}
	}
	return rw
}

// Name returns the lock's name, which is also the key of its hash.
func (rw *RWMutex) Name() string { return rw.w.name }

// Err returns the error every call on the lock returns when it cannot be
// used (see Client.RWMutex), or nil.
func (rw *RWMutex) Err() error { return rw.w.err }

// RLock waits until it holds the read side or ctx ends; it is
// TryRLock(ctx, Forever, 0).
func (rw *RWMutex) RLock(ctx context.Context) (context.Context, error) {
	return rw.r.TryLock(ctx, Forever, 0)
}

// TryRLock takes the read side, waiting at most wait while a writer holds
// it or waits before this reader (see RWMutex): the rules of wait, lease,
// the hold context and the errors are Mutex.TryLock's. With a hold context
// of the read side it re-enters; with one of the write side it takes the
// writer's own read hold.
func (rw *RWMutex) TryRLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return rw.r.TryLock(ctx, wait, lease)
}

// RUnlock releases the read level that the hold context hold carries, as
// Mutex.Unlock does; the last reader's release hands the lock to the head
// of the queue (or publishes Redisson's "0").
func (rw *RWMutex) RUnlock(hold context.Context) error {
	return rw.r.Unlock(hold)
}

// Lock waits until it holds the write side or ctx ends; it is
// TryLock(ctx, Forever, 0).
func (rw *RWMutex) Lock(ctx context.Context) (context.Context, error) {
	return rw.w.TryLock(ctx, Forever, 0)
}

// TryLock takes the write side, waiting at most wait while anyone holds the
// lock: the rules are Mutex.TryLock's. With a hold context of the write side
// it re-enters; with one of the read side only it returns ErrUpgrade.
func (rw *RWMutex) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return rw.w.TryLock(ctx, wait, lease)
}

// Unlock releases the write level that the hold context hold carries, as
// Mutex.Unlock does. The last level hands the lock on (or publishes
// Redisson's "1"), unless the writer holds the read side too: the lock is
// then the writer's read hold's (mode read), and the readers at the head of
// the queue join it.
func (rw *RWMutex) Unlock(hold context.Context) error {
	return rw.w.Unlock(hold)
}

// UnlockAt gives the write hold of hold up at at, as Mutex.UnlockAt does; a
// writer that holds the read side too is released now.
func (rw *RWMutex) UnlockAt(hold context.Context, at time.Time) error {
	return rw.w.UnlockAt(hold, at)
}

// RLocker returns the read side as a Locker, for the decorators and
// adapters: its Lock, TryLock and Unlock are RLock, TryRLock and RUnlock.
func (rw *RWMutex) RLocker() Locker { return rw.r }

// Token returns the fencing token of the write hold that hold carries, with
// no round trip; false when hold carries none or the lock was made without
// WithFencing. Readers have no tokens.
func (rw *RWMutex) Token(hold context.Context) (int64, bool) {
	if rw.w.err != nil || !rw.w.fenced {
		return 0, false
	}
	lvl := rw.w.findLevel(hold)
	if lvl == nil || lvl.h.token == 0 {
		return 0, false
	}
	return lvl.h.token, true
}

func (rw *RWMutex) client() *Client { return rw.w.c }

// base is the write side's lockBase: an RWMutex is its write side (a
// MultiLock's member, for one).
func (rw *RWMutex) base() *lockBase { return &rw.w.lockBase }

// Name, Lock, TryLock, Unlock and UnlockAt make a side a Locker of this
// package (ownLocker).
func (s *rwSide) Name() string { return s.name }

func (s *rwSide) Lock(ctx context.Context) (context.Context, error) {
	return s.TryLock(ctx, Forever, 0)
}

func (s *rwSide) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if s.err != nil {
		return ctx, s.err
	}
	if s.kind == kindWrite && s.peer.findLevel(ctx) != nil {
		if wl := s.findLevel(ctx); wl == nil || wl.h.getState() != holdActive {
			return ctx, fmt.Errorf("%w: %q", ErrUpgrade, s.name)
		}
	}
	return s.e.tryLock(ctx, wait, lease, false)
}

func (s *rwSide) Unlock(hold context.Context) error {
	return s.UnlockAt(hold, time.Time{})
}

func (s *rwSide) UnlockAt(hold context.Context, at time.Time) error {
	if s.err != nil {
		return s.err
	}
	return s.e.release(hold, expireIn(at))
}

func (s *rwSide) client() *Client { return s.c }

// Err is RWMutex.Err, for the read side as a Locker (a MultiLock's member).
func (s *rwSide) Err() error { return s.err }
