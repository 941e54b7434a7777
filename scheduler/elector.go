package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-co-op/gocron/v2"
	"github.com/go-rlock/rlock/lockmw"
)

var _ gocron.Elector = (*Elector)(nil)

// Elector is a gocron.Elector on lockmw: set it with
// gocron.WithDistributedElector on every instance's scheduler, and only the
// instance that holds the leader lock runs jobs. The leader lock is renewed
// by the watchdog of the lockmw.Client for as long as the leader lives.
//
// gocron asks IsLeader before each run of each job and never calls a Locker
// when the scheduler has an Elector: the leader's jobs run unlocked, and
// jobs of all instances run on the leader only.
//
// Leadership moves when the leader stops: its Close releases the lock and
// another instance becomes leader at its next IsLeader; a leader that
// crashes stops renewing, and another instance takes over once the lock
// expires, within the watchdog timeout of the leader's lockmw.Client. Call
// Close after the scheduler's Shutdown.
//
// An Elector is safe for concurrent use; concurrent IsLeader calls of a
// non-leader make one acquisition attempt at a time.
type Elector struct {
	m   *lockmw.Mutex
	opt options

	mu        sync.Mutex
	closed    bool
	leader    *held // the leader lock; nil when not the leader
	stopWatch func() bool
}

// NewElector returns an Elector whose leader lock is the key prefix (see
// [WithKeyPrefix]) followed by name; electors of instances that elect one
// leader share the name and the prefix. It panics when c is nil, name is
// empty or makes an invalid lock name, or an option is invalid.
// [WithMinHold] does not apply to it.
func NewElector(c *lockmw.Client, name string, opts ...Option) *Elector {
	if c == nil {
		panic(fmt.Sprintf("scheduler: NewElector(nil, %q): a lockmw.Client is required", name))
	}
	if name == "" {
		panic(`scheduler: NewElector(c, ""): the elector name must not be empty`)
	}
	o := newOptions("NewElector", opts)
	m := c.Mutex(o.prefix + name)
	// A context that carries no hold answers without a round trip, so this
	// only checks the name.
	if _, err := m.HoldCount(context.Background()); errors.Is(err, lockmw.ErrInvalidName) {
		panic(fmt.Sprintf("scheduler: NewElector(c, %q): %v", name, err))
	}
	return &Elector{m: m, opt: o}
}

// IsLeader returns nil when this instance is the leader, and an error
// matching [ErrNotLeader] otherwise.
//
// The leader answers from memory, with no round trip. It stops being the
// leader as soon as lockmw reports the leader lock lost (a renewal found it
// gone or someone else's, or renewals failed until it could have expired) or
// the lockmw.Client closed: the first IsLeader after that returns an error
// that also matches lockmw.ErrLockLost or lockmw.ErrClosed, and the next one
// tries to become leader again. After the lockmw.Client closed, that first
// IsLeader also gives the leader lock back (it is no longer renewed), so
// another instance leads without waiting for it to expire. A non-leader makes one attempt to take the
// leader lock, bounded by the lock timeout ([WithLockTimeout]) and ctx: the
// error then also matches lockmw.ErrNotAcquired when another instance leads,
// and [ErrUnavailable] when Redis failed. After Close it always returns an
// error.
func (e *Elector) IsLeader(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("%w: elector %q is closed", ErrNotLeader, e.m.Name())
	}
	if e.leader != nil {
		if e.leader.hold.Err() == nil {
			return nil
		}
		cause := context.Cause(e.leader.hold)
		// Ends the hold: after a loss this touches nothing in Redis; after
		// the client's Close it releases the lock if it is still ours.
		_ = e.leader.Release()
		e.leader, e.stopWatch = nil, nil
		return fmt.Errorf("%w: %q: leadership lost: %w", ErrNotLeader, e.m.Name(), cause)
	}
	h, err := take(ctx, context.Background(), e.m, e.opt.lockTimeout, 0)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotLeader, classify(fmt.Sprintf("elector %q", e.m.Name()), err))
	}
	log, name := e.opt.logger, e.m.Name()
	e.leader = h
	e.stopWatch = h.watchLoss(func(cause error) {
		log.Warn("scheduler: leadership lost", "elector", name, "cause", cause)
	})
	return nil
}

// Close gives the leadership up, if this instance has it, by releasing the
// leader lock, so that another instance becomes leader at its next IsLeader;
// later IsLeader calls return an error. It returns the Redis error when the
// release failed (it is then retried in the background until it succeeds,
// or the lock is lost or the client closed; meanwhile no other instance can
// lead). It does not close the lockmw.Client. Calling it again does nothing.
func (e *Elector) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.leader == nil {
		return nil
	}
	leader := e.leader
	e.stopWatch()
	e.leader, e.stopWatch = nil, nil
	err := leader.Release()
	if err != nil && !errors.Is(err, lockmw.ErrLockLost) {
		return fmt.Errorf("scheduler: closing elector %q: %w", e.m.Name(), err)
	}
	return nil
}
