package main

import (
	"context"
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
	crash   chan struct{}      // closed at the crash: it does nothing more
	crashed chan struct{}      // closed when its work stopped for the crash
	done    chan error         // what its Lead returned
	started bool
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
		stop:    func() {},
		crash:   make(chan struct{}),
		crashed: make(chan struct{}),
		done:    make(chan error, 1),
	}
}

// start runs the instance's Lead in the background, in a trace of its own
// under a root span named after it.
func (in *leaderInstance) start(ctx context.Context, r *leaderRun) {
	ctx, in.stop = context.WithCancel(ctx)
	in.started = true
	go func() {
		ctx, span := r.tracer.Start(ctx, in.name)
		err := lockmw.Lead(ctx, in.locks.Mutex(leaderLock), in.work(ctx, r))
		span.End()
		in.done <- err
	}()
}

// work is what the instance does while it leads: a tick now and then, in a
// span of its own under lock.hold, until the term ends or the instance
// crashes. A crashed instance does nothing more until ctx ends.
func (in *leaderInstance) work(ctx context.Context, r *leaderRun) func(lead context.Context) error {
	return func(lead context.Context) error {
		_, span := r.tracer.Start(lead, leaderWorkSpan)
		select {
		case r.terms <- leaderTerm{in, time.Now()}:
		default:
		}
		t := time.NewTicker(leaderTick)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				r.p.event("%s: tick %d", in.name, r.ticks.Add(1))
			case <-lead.Done(): // it steps down (ctx ended), or lost the lock
				span.End()
				return nil
			case <-in.crash:
				span.End()
				close(in.crashed)
				<-ctx.Done()
				return nil
			}
		}
	}
}

// crashNow stops the instance's work and drops its connections without
// releasing anything: its lock stays until its TTL runs out.
func (in *leaderInstance) crashNow() time.Time {
	close(in.crash)
	<-in.crashed
	at := time.Now()
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
