package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/go-rlock/rlock/internal/skip"
	"github.com/go-rlock/rlock/lockmw"
)

var _ gocron.Elector = (*Elector)(nil)

// errElectorClosed is the cause of the campaign's context after Close.
var errElectorClosed = errors.New("scheduler: elector closed")

// Elector is a gocron.Elector on [lockmw.Lead]: set it with
// gocron.WithDistributedElector on every instance's scheduler, and only the
// instance that leads runs jobs.
//
// [NewElector] starts a campaign for the leader lock on a goroutine of its
// own, which ends at the Elector's Close or the lockmw.Client's. The
// campaign waits in the lock's queue (no polling); the leader holds the lock,
// renewed by the watchdog of the lockmw.Client, until it closes, its client
// closes or it loses the lock, and after a loss campaigns again. gocron asks
// IsLeader before each run of each job, and IsLeader answers from memory:
// no round trip per job run. gocron never calls a Locker when the scheduler
// has an Elector: the leader's jobs run unlocked, and jobs of all instances
// run on the leader only.
//
// Leadership moves at once when the leader closes (a hand-off: its Close
// releases the lock and the next standby in the queue takes it), and within
// the watchdog timeout plus one renewal interval of the leader's
// lockmw.Client when the leader crashes (the lock expires). Call Close after
// the scheduler's Shutdown.
//
// An Elector is safe for concurrent use.
type Elector struct {
	c    *lockmw.Client
	m    *lockmw.Mutex
	log  *slog.Logger
	stop context.CancelCauseFunc
	done chan struct{} // closed when the campaign has ended
	// settled is closed when the first campaign attempt has an outcome: a
	// term began, another instance leads, the attempt failed, or the
	// campaign ended.
	settled     chan struct{}
	settle      func()
	waitSettled time.Duration // WithLockTimeout

	mu     sync.Mutex
	closed bool
	lead   context.Context // the hold context of the current or last term; nil before the first
	ended  error           // why the campaign ended by itself (the client closed); nil while it runs
}

// NewElector returns an Elector whose leader lock is the key prefix (see
// [WithKeyPrefix]) followed by name, and starts its campaign; electors of
// instances that elect one leader share the name and the prefix. It panics
// when c is nil, name is empty or makes an invalid lock name, or an option is
// invalid. [WithMinHold] does not apply to it (it makes no attempt per
// call), but its value is checked as for a Locker; [WithLockTimeout] bounds
// IsLeader's wait for the first campaign attempt.
func NewElector(c *lockmw.Client, name string, opts ...Option) *Elector {
	if c == nil {
		panic(fmt.Sprintf("scheduler: NewElector(nil, %q): a lockmw.Client is required", name))
	}
	if name == "" {
		panic(`scheduler: NewElector(c, ""): the elector name must not be empty`)
	}
	o := newOptions("NewElector", opts)
	m := mustName(c.Mutex(o.prefix+name, adapter), fmt.Sprintf("NewElector(c, %q)", name))
	ctx, stop := context.WithCancelCause(context.Background())
	e := &Elector{c: c, m: m, log: o.logger, stop: stop, done: make(chan struct{}),
		settled: make(chan struct{}), waitSettled: o.lockTimeout}
	e.settle = sync.OnceFunc(func() { close(e.settled) })
	go e.campaign(ctx)
	return e
}

// IsLeader returns nil while this instance leads, and an error matching
// [ErrNotLeader] otherwise. It answers from memory, with no round trip.
//
// Only a call made while the campaign's first attempt is in flight waits:
// for that attempt's outcome (one acquisition round trip: won, or another
// instance leads), at most the lock timeout ([WithLockTimeout], 500ms by
// default) and until ctx ends; then it answers from memory too. So a job
// started immediately (gocron.WithStartImmediately) runs on the instance
// that wins, rather than being skipped because the first tick came a
// millisecond before the campaign's reply. A ctx that ended during that
// wait is joined to the error.
//
// It stops returning nil as soon as the term ends: when lockmw reports the
// leader lock lost (a renewal found it gone or someone else's, or renewals
// failed until it could have expired) the error also matches
// lockmw.ErrLockLost, until the campaign, which goes on by itself, wins
// again; when the lockmw.Client closed it also matches lockmw.ErrClosed, for
// good. A standby's error says that it campaigns. After Close it always
// returns an error.
//
// gocron calls IsLeader before each run and skips the run when it fails, so
// each error is also reported to the lockmw.Client's Skip hooks
// ([lockmw.Hooks.Skip]; otelhooks counts it in lock.skips, with
// lock.adapter gocron): reason busy while another instance leads or the
// campaign goes on, error once the Elector or its Client is closed.
func (e *Elector) IsLeader(ctx context.Context) error {
	err := e.isLeader(ctx)
	if err != nil {
		reason := lockmw.SkipBusy
		if e.over() {
			reason = lockmw.SkipFailed
		}
		skip.Locked(ctx, e.c, e.m, reason, err)
	}
	return err
}

// over reports whether the campaign is over for good: the Elector or its
// Client closed.
func (e *Elector) over() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed || e.ended != nil
}

// isLeader is IsLeader's answer.
func (e *Elector) isLeader(ctx context.Context) error {
	select {
	case <-e.settled:
		return e.answer()
	default:
	}
	t := time.NewTimer(e.waitSettled)
	defer t.Stop()
	select {
	case <-e.settled:
	case <-t.C:
	case <-ctx.Done():
		if err := e.answer(); err != nil {
			return errors.Join(err, context.Cause(ctx))
		}
	}
	return e.answer()
}

// answer is IsLeader's answer from memory.
func (e *Elector) answer() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	name := e.m.Name()
	switch {
	case e.closed:
		return fmt.Errorf("%w: elector %q is closed", ErrNotLeader, name)
	case e.lead != nil && e.lead.Err() == nil:
		return nil
	case e.ended != nil:
		return fmt.Errorf("%w: elector %q: the campaign ended: %w", ErrNotLeader, name, e.ended)
	case e.lead != nil:
		return fmt.Errorf("%w: elector %q: leadership lost: %w", ErrNotLeader, name, context.Cause(e.lead))
	}
	return fmt.Errorf("%w: elector %q: campaigning", ErrNotLeader, name)
}

// Close ends the campaign and waits for it: a leader stops leading (IsLeader
// fails from the moment Close is called) and releases the leader lock, so
// that the next standby leads at once; a release that fails leaves the lock
// to expire within the watchdog timeout. Later IsLeader calls return an
// error. It does not close the lockmw.Client, and returns nil (it is an
// io.Closer). Calling it again waits for the same end.
func (e *Elector) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.stop(errElectorClosed)
	<-e.done
	return nil
}

// campaign runs lockmw.Lead until Close, or until the client closes: Lead
// returns ErrClosed at its next attempt, and the campaign's context ends at
// once (not after a back-off between attempts).
func (e *Elector) campaign(ctx context.Context) {
	defer close(e.done)
	defer e.settle()
	ctx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-e.c.Done():
			cancel(lockmw.ErrClosed)
		case <-ctx.Done():
		}
	}()
	defer func() {
		cancel(nil)
		<-watched
	}()
	for {
		err := lockmw.Lead(ctx, e.m, e.term, lockmw.WithFirstAttempt(e.firstAttempt))
		if errors.Is(context.Cause(ctx), errElectorClosed) {
			return
		}
		if err != nil {
			e.log.Info("scheduler: elector stopped campaigning", "elector", e.m.Name(), "err", err)
			e.mu.Lock()
			e.ended = err
			e.mu.Unlock()
			return
		}
		// A term ended for a reason other than a loss or the end of ctx:
		// Lead released the lock; campaign again.
	}
}

// firstAttempt settles IsLeader's first wait when the first attempt did
// not win; a win settles it in term, once IsLeader can answer nil.
func (e *Elector) firstAttempt(err error) {
	if err != nil {
		e.settle()
	}
}

// term is Lead's fn: it makes IsLeader answer nil until lead ends.
func (e *Elector) term(lead context.Context) error {
	e.mu.Lock()
	e.lead = lead
	e.mu.Unlock()
	e.settle()
	e.log.Info("scheduler: leading", "elector", e.m.Name())
	<-lead.Done()
	if cause := context.Cause(lead); !errors.Is(cause, errElectorClosed) {
		e.log.Warn("scheduler: leadership lost", "elector", e.m.Name(), "cause", cause)
	}
	return nil
}
