package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/lockmw"
)

// leaderRun is what the instances of the leadership section share: the
// report, the tracer, the count of ticks and the news of each term.
type leaderRun struct {
	p      *printer
	tracer trace.Tracer
	hooks  lockmw.Hooks
	ticks  atomic.Int32
	terms  chan leaderTerm // a term began; buffered, never blocks a leader
}

// leaderTerm is the news that an instance began to lead.
type leaderTerm struct {
	in *leaderInstance
	at time.Time
}

// leaderInstance is one instance of a service that runs its periodic work
// only while it leads: its own go-redis client (closing it is the crash: its
// connections drop and nothing is released, as with kill -9), its own
// lockmw.Client with a short watchdog timeout, and its Lead loop.
type leaderInstance struct {
	name    string
	rdb     *redis.Client
	locks   *lockmw.Client
	stop    context.CancelFunc // ends its Lead: a step-down when it leads
	started bool
	done    chan struct{} // closed when its Lead returned, once started
	err     error         // what its Lead returned, once done is closed

	mu   sync.Mutex
	dead bool       // it crashed: it does nothing more
	term trace.Span // the work span of the term under way; nil when it does not lead
}

// newLeaderInstance gives the instance name its own connections to the
// server base talks to, and its Client.
func newLeaderInstance(base *redis.Client, r *leaderRun, name string) *leaderInstance {
	opt := *base.Options()
	rdb := redis.NewClient(&opt)
	return &leaderInstance{
		name: name,
		rdb:  rdb,
		locks: lockmw.New(rdb, withName(name), lockmw.WithHooks(r.hooks),
			lockmw.WithWatchdogTimeout(leaderWatchdog)),
		stop: func() {},
		done: make(chan struct{}),
	}
}

// start runs the instance's Lead in the background, in a trace of its own
// under a root span named after it.
func (in *leaderInstance) start(ctx context.Context, r *leaderRun) {
	ctx, in.stop = context.WithCancel(ctx)
	in.started = true
	go func() {
		defer close(in.done)
		ctx, span := r.tracer.Start(ctx, in.name)
		in.err = lockmw.Lead(ctx, in.locks.Mutex(leaderLock), in.work(ctx, r))
		span.End()
	}()
}

// work is what the instance does while it leads: a tick now and then, in a
// span of its own under lock.hold, until the term ends. A dead instance
// does nothing more until ctx ends.
func (in *leaderInstance) work(ctx context.Context, r *leaderRun) func(lead context.Context) error {
	return func(lead context.Context) error {
		if !in.begin(lead, r) {
			<-ctx.Done()
			return nil
		}
		defer in.end()
		t := time.NewTicker(leaderTick)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if !in.do(func() { r.p.event("%s: tick %d", in.name, r.ticks.Add(1)) }) {
					<-ctx.Done()
					return nil
				}
			case <-lead.Done(): // it steps down (ctx ended), or lost the lock
				alive := in.do(func() {
					if cause := context.Cause(lead); errors.Is(cause, lockmw.ErrLockLost) {
						r.p.event("%s lost its term (%v): Lead campaigns again", in.name, cause)
					}
				})
				if !alive { // a dead instance does not campaign again
					<-ctx.Done()
				}
				return nil
			}
		}
	}
}

// begin starts a term's work span and tells the section; false when the
// instance is dead.
func (in *leaderInstance) begin(lead context.Context, r *leaderRun) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.dead {
		return false
	}
	_, in.term = r.tracer.Start(lead, leaderWorkSpan)
	select {
	case r.terms <- leaderTerm{in, time.Now()}:
	default:
	}
	return true
}

// end ends the term's work span, if the crash has not.
func (in *leaderInstance) end() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.term != nil {
		in.term.End()
		in.term = nil
	}
}

// do runs f unless the instance is dead, and reports whether it ran it.
func (in *leaderInstance) do(f func()) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.dead {
		f()
	}
	return !in.dead
}

// leading reports whether the instance leads and is alive.
func (in *leaderInstance) leading() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.term != nil && !in.dead
}

// crashNow kills the instance: its work stops at once (the work span of its
// term ends now), and its connections drop without releasing anything, so
// its lock stays until its TTL runs out.
func (in *leaderInstance) crashNow() time.Time {
	in.mu.Lock()
	in.dead = true
	if in.term != nil {
		in.term.End()
		in.term = nil
	}
	at := time.Now()
	in.mu.Unlock()
	_ = in.rdb.Close()
	return at
}

// close stops the instance and waits for its Lead, then closes its Client
// and connections.
func (in *leaderInstance) close() {
	in.stop()
	if in.started {
		<-in.done
	}
	_ = in.locks.Close()
	_ = in.rdb.Close()
}
