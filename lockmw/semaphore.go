package lockmw

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// semIdleTTL is how long a semaphore's count outlives its last permit: a
// name unused for a day leaves nothing behind (Redisson never expires it).
const semIdleTTL = 24 * time.Hour

// Semaphore limits a name to at most N holders at once, across every Client
// and process: Redisson's RPermitExpirableSemaphore, with rlock's waiting
// (a queue and a hand-off, no polling), renewal and lost-permit signal.
//
// A permit is a hold: Lock and TryLock return a hold context, cancelled
// when the permit ends, which Unlock takes; the lifetimes are a mutex's (a
// permit without a lease is renewed by the Client's watchdog; one with a
// lease expires). A permit is not reentrant: Lock with a hold context of
// the semaphore takes a second permit, and Unlock of a hold context releases
// the innermost permit of this semaphore it carries.
//
// The number of permits is set by the first Client that uses the name (as
// Redisson's trySetPermits): another Client's permits argument for the same
// name is ignored while the semaphore exists. A name is either a Mutex or a
// Semaphore: Redis answers WRONGTYPE to the other.
//
// On a quorum Client (NewQuorum) each permit is a quorum mutex of its own,
// "{name}:rlock_permit:<i>" for i below permits, and a holder takes the first
// free one, trying them one quorum round each from a random one on: a
// TryLock costs as many rounds as permits it finds busy, and never
// over-grants (docs/topologies.md). There the permits argument is each
// Client's, with no count kept in Redis: Clients that give a name different
// counts share its first permits, so that the name has at most the largest
// count of holders. A waiter is woken by any permit's release (pub/sub on every master,
// no queue and no hand-off, as the quorum mutex's); Redisson has no quorum
// semaphore, and a Redisson RPermitExpirableSemaphore of the name on one of
// the masters is another lock.
type Semaphore struct {
	lockBase
	e   engine
	err error
	rtt *rttGauge // the Client's round trips: the window of a reservation (reserve.go)
	// quorum, on a quorum Client, is the semaphore as its permits' quorum
	// mutexes (quorumsem.go), and the engine's kindOps; nil otherwise.
	quorum *quorumSem
	akeys  []string // the acquire script's keys
	// Boxed once for the command lines of the hot path: akeys (the
	// release's first five keys too), the hand-off key, permits.
	keyArgs    []any
	handoffArg any
	permitsArg any
}

// Semaphore returns the semaphore called name with permits permits, with
// [WithGroup] as its option. A name that cannot be used gives a Semaphore
// whose every call returns ErrInvalidName, permits < 1 one that returns
// ErrInvalidArgument; a nil option is skipped. It panics only on
// [WithFencing], configuration that can never be right: permits have no
// fencing tokens.
func (c *Client) Semaphore(name string, permits int, opts ...LockOption) *Semaphore {
	o := newLockOptions(opts)
	if o.fencing {
		panic(fmt.Sprintf("lockmw: Semaphore(%q, %d, WithFencing()): a semaphore's permits have no fencing tokens", name, permits))
	}
	s := &Semaphore{lockBase: lockBase{c: c, name: name, kind: kindSemaphore, permits: permits, group: o.group, adapter: o.adapter}}
	s.e = engine{&s.lockBase, s}
	single, ok := c.store.(*singleStore)
	switch {
	case permits < 1:
		s.err = fmt.Errorf("%w: semaphore %q with %d permits, want at least 1", ErrInvalidArgument, name, permits)
	case !ok: // the name, then its longest permit's (MaxNameLen)
		if s.err = validateName(name, c.ns, c.cluster, newKeys); s.err == nil {
			s.err = validateName(layout.QuorumPermit(name, permits-1), c.ns, c.cluster, newKeys)
		}
	default:
		s.err = validateName(name, c.ns, c.cluster, newSemKeys)
	}
	if s.err != nil {
		return s
	}
	if !ok {
		s.quorum = newQuorumSem(s, c.store.(*quorumStore))
		s.e = engine{&s.lockBase, s.quorum}
		return s
	}
	s.rtt = &single.rtt
	s.k = newSemKeys(c.ns, name)
	s.renewKey = s.k.permits
	s.akeys = []string{s.k.lock, s.k.channel, s.k.queue, s.k.waiters, s.k.permits}
	s.keyArgs = []any{s.k.lock, s.k.channel, s.k.queue, s.k.waiters, s.k.permits}
	s.handoffArg, s.permitsArg = s.k.handoff, permits
	return s
}

// Name returns the semaphore's name, which is also the key of its count.
func (s *Semaphore) Name() string { return s.name }

// Err returns the error every call on the semaphore returns (see
// Client.Semaphore), or nil.
func (s *Semaphore) Err() error { return s.err }

// Lock waits until it holds a permit or ctx ends; it is TryLock(ctx, Forever, 0).
func (s *Semaphore) Lock(ctx context.Context) (context.Context, error) {
	return s.TryLock(ctx, Forever, 0)
}

// TryLock takes a permit, waiting at most wait when none is free: 0 is a
// single attempt, Forever waits until ctx ends. With lease == 0 the permit
// is renewed by the watchdog until Unlock; with lease > 0 it expires then.
// On success it returns the hold context (see Mutex.TryLock: the same
// rules, except that a permit is not reentrant). A wait rides out transient
// Redis errors as Mutex.TryLock's does. On failure it returns ctx and a
// *BusyError (matching ErrNotAcquired; its TTL is the earliest permit's), or
// ErrNotAcquired joined with the last Redis error when Redis failed until the
// wait ended (see Mutex.TryLock), ErrClosed, ErrInvalidName,
// ErrInvalidArgument, or the Redis error.
func (s *Semaphore) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if s.err != nil {
		return ctx, s.err
	}
	return s.e.tryLock(ctx, wait, lease, false)
}

// Unlock gives back the permit of the hold context hold, the innermost of
// this semaphore that it carries: to the first waiter in the queue, else to
// the count. As Mutex.Unlock, it works with a cancelled hold, runs bounded by
// the release timeout, and returns ErrNotHeld when hold carries no permit of
// this semaphore, ErrLockLost when the permit was lost (nothing in Redis is
// touched) or has expired, or the Redis error (then Unlock may be called
// again).
func (s *Semaphore) Unlock(hold context.Context) error {
	return s.release(hold, 0)
}

// UnlockAt gives the permit of the hold context hold up at at: renewal stops
// now and the permit expires at at (at once when at has passed), when
// anyone's next attempt reclaims it. The hold context is cancelled now.
func (s *Semaphore) UnlockAt(hold context.Context, at time.Time) error {
	return s.release(hold, expireIn(at))
}

// release gives the permit the hold context hold carries back now
// (expireMS 0) or lets it expire in expireMS.
func (s *Semaphore) release(hold context.Context, expireMS int64) error {
	if s.err != nil {
		return s.err
	}
	return s.e.release(hold, expireMS)
}

// Available returns how many permits are free now, after expired ones are
// reclaimed; the semaphore's permits when nobody has used the name yet.
func (s *Semaphore) Available(ctx context.Context) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.quorum != nil {
		n, err := bounded(s.c, ctx, s.quorum.available, nil)
		return n, withCtxErr(ctx, err)
	}
	run := func(ctx context.Context) (int, error) {
		n, err := scripts.Eval(ctx, s.c.be, scripts.SemAvailable, s.akeys, s.c.publishCmd(ctx), s.permits, msCeil(semIdleTTL)).Int()
		if err != nil {
			return 0, fmt.Errorf("lockmw: available permits of %q: %w", s.name, err)
		}
		return n, nil
	}
	n, err := bounded(s.c, ctx, run, nil)
	return n, withCtxErr(ctx, err)
}
