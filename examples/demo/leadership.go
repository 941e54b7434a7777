package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/go-rlock/rlock/examples/internal/timeline"
	"github.com/go-rlock/rlock/otelhooks"
)

const (
	leaderLock      = "reports:leader"
	leaderInstances = 3
	leaderWatchdog  = 900 * time.Millisecond // the instances' watchdog timeout: renewed every 300ms
	leaderTick      = 250 * time.Millisecond // a leader's periodic work
	leaderTermLen   = 700 * time.Millisecond // how long a leader works before the next event
	leaderWorkSpan  = "leading"              // a term's work, a child of lock.hold
	// leaderBound is how soon a standby takes over from a leader that died:
	// the watchdog timeout plus one renewal interval.
	leaderBound = leaderWatchdog + leaderWatchdog/3
)

// leadershipSection runs three instances that campaign with lockmw.Lead on
// one name and tick while they lead. The leader crashes (its connections
// drop, nothing is released): another takes over once the lock expires.
// That one steps down: the third takes over at once. It draws the terms
// from the spans and fails unless both takeovers happened and the terms'
// work never overlapped.
func leadershipSection(ctx context.Context, p *printer, rdb redis.UniversalClient) error {
	base, ok := rdb.(*redis.Client)
	if !ok {
		return fmt.Errorf("the leadership section needs a single-node client, not a %T", rdb)
	}
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(resource.Empty()), sdktrace.WithSyncer(mem))
	defer func() { _ = tp.Shutdown(context.WithoutCancel(ctx)) }()
	r := &leaderRun{p: p, tracer: tp.Tracer("examples/demo"),
		hooks: otelhooks.New(otelhooks.WithTracerProvider(tp)), terms: make(chan leaderTerm, 8)}
	var ins []*leaderInstance
	defer func() {
		for _, in := range ins {
			in.close()
		}
	}()
	for i := range leaderInstances {
		ins = append(ins, newLeaderInstance(base, r, fmt.Sprintf("instance-%d", i+1)))
	}
	p.note("%d instances, each with its own connections and Client (watchdog timeout %v, otelhooks), run", leaderInstances, leaderWatchdog)
	p.note("lockmw.Lead(ctx, c.Mutex(%q), fn): fn ticks every %v while its instance leads", leaderLock, leaderTick)

	st, err := leaderStory(ctx, r, ins)
	if err != nil {
		return err
	}
	for _, in := range ins {
		in.stop()
		<-in.done
		if !errors.Is(in.err, context.Canceled) {
			return fmt.Errorf("%s: Lead returned %v, want context.Canceled", in.name, in.err)
		}
	}
	if err := tp.ForceFlush(ctx); err != nil {
		return err
	}
	terms, err := drawTerms(p, mem.GetSpans(), st.dead.name, st.crashed)
	if err != nil {
		return err
	}
	p.summary("%d terms, one at a time (the %q spans never overlap): taken over %v after the crash (bound %v), handed over %v after the step-down",
		terms, leaderWorkSpan, st.crashGap.Round(time.Millisecond), leaderBound, st.handGap.Round(time.Millisecond))
	return nil
}

// leaderEvents is what happened in the section's story.
type leaderEvents struct {
	dead              *leaderInstance // the leader that crashed
	crashed           time.Time
	crashGap, handGap time.Duration
}

// leaderStory plays the section's events: instance-1 leads, the others
// stand by; the leader crashes and another takes over; that one steps down
// and the last takes over. A leader that loses its term on a loaded machine
// campaigns again; the story goes on with whoever leads.
func leaderStory(ctx context.Context, r *leaderRun, ins []*leaderInstance) (st leaderEvents, err error) {
	p := r.p
	ins[0].start(ctx, r)
	if _, _, err := nextLeader(ctx, r); err != nil {
		return st, err
	}
	p.event("%s leads", ins[0].name)
	for _, in := range ins[1:] {
		in.start(ctx, r)
		p.event("%s campaigns: it stands by in the lock's queue", in.name)
	}
	if err := pause(ctx, leaderTermLen); err != nil {
		return st, err
	}
	if st.dead, err = currentLeader(ctx, r, ins); err != nil {
		return st, err
	}
	st.crashed = st.dead.crashNow()
	p.event("%s crashes: its connections drop, nothing is released; its lock expires within %v", st.dead.name, leaderWatchdog)
	second, at, err := nextLeader(ctx, r, st.dead)
	if err != nil {
		return st, err
	}
	st.crashGap = at.Sub(st.crashed)
	p.event("%s leads, %v after the crash (the bound: watchdog timeout + one renewal interval = %v)",
		second.name, st.crashGap.Round(time.Millisecond), leaderBound)
	if err := pause(ctx, leaderTermLen); err != nil {
		return st, err
	}
	leader, err := currentLeader(ctx, r, ins)
	if err != nil {
		return st, err
	}
	leader.stop()
	steppedDown := time.Now()
	p.event("%s steps down: its ctx is cancelled, Lead releases the lock", leader.name)
	third, at, err := nextLeader(ctx, r, st.dead, leader)
	if err != nil {
		return st, err
	}
	st.handGap = at.Sub(steppedDown)
	p.event("%s leads, %v after the step-down: handed over, not left to expire", third.name, st.handGap.Round(time.Millisecond))
	return st, pause(ctx, leaderTermLen/2)
}

// nextLeader waits for the next term of an instance other than those in
// not, and returns it and when it began.
func nextLeader(ctx context.Context, r *leaderRun, not ...*leaderInstance) (*leaderInstance, time.Time, error) {
	deadline := time.After(10 * leaderBound)
	for {
		select {
		case t := <-r.terms:
			if !slices.Contains(not, t.in) {
				return t.in, t.at, nil
			}
		case <-deadline:
			return nil, time.Time{}, fmt.Errorf("no new leader within %v", 10*leaderBound)
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		}
	}
}

// currentLeader returns the live instance that leads now, or waits for the
// next term when none does (between a lost term and the next); the news of
// the terms that began so far is read.
func currentLeader(ctx context.Context, r *leaderRun, ins []*leaderInstance) (*leaderInstance, error) {
	for len(r.terms) > 0 {
		<-r.terms
	}
	for _, in := range ins {
		if in.leading() {
			return in, nil
		}
	}
	in, _, err := nextLeader(ctx, r)
	return in, err
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drawTerms checks that there were at least three terms and that their
// work spans never overlap, and draws one row per instance from its
// lock.wait (campaign) and lock.hold (term) spans, the terms of the
// instance dead drawn 'x' after it died. It returns the number of terms.
func drawTerms(p *printer, spans tracetest.SpanStubs, dead string, died time.Time) (terms int, err error) {
	terms, err = spansApart(spans, leaderWorkSpan)
	if err != nil {
		return 0, err
	}
	if terms < leaderInstances {
		return 0, fmt.Errorf("%d %q spans, want at least %d", terms, leaderWorkSpan, leaderInstances)
	}
	rows, err := timeline.RowsOf(spans, "instance-")
	if err != nil {
		return 0, err
	}
	if len(rows) != leaderInstances {
		return 0, fmt.Errorf("spans of %d instances, want %d", len(rows), leaderInstances)
	}
	for _, row := range rows {
		if row.Worker == dead {
			row.Died = died
		}
	}
	var b strings.Builder
	err = timeline.Draw(&b, rows, fmt.Sprintf("  terms of %q", leaderLock), timeline.Format{
		Columns:   timelineColumns,
		Indent:    "  ",
		NameWidth: 10,
		Link:      ", its campaign links to %s's term",
		Legend:    "'.' campaigning (lock.wait), '#' leading (lock.hold), 'x' dead",
	})
	if err != nil {
		return 0, err
	}
	p.blank()
	p.printf("%s", b.String())
	p.note("%s died at the first 'x': its lock stays until it expires (its term ends when its Client gives", dead)
	p.note("the lock up for lost, just before); a dead leader releases nothing, so the next campaign ends then")
	return terms, nil
}
