package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

const (
	timelineLock    = "orders:42"
	timelineWorkers = 4
	timelineHold    = 120 * time.Millisecond
	timelineColumns = 60
	workSpanName    = "update order 42"
)

// timelineSection has a few workers, each with its own Client instrumented
// by otelhooks, take one lock at almost the same time, records the spans in
// memory and draws from them one row per worker: '.' while it waits, '#'
// while it holds. It fails unless the work spans, children of the lock.hold
// spans, never overlap.
func timelineSection(ctx context.Context, p *printer, rdb redis.UniversalClient) error {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.Empty()),
		sdktrace.WithSyncer(mem),
	)
	defer func() { _ = tp.Shutdown(context.WithoutCancel(ctx)) }()
	hooks := otelhooks.New(otelhooks.WithTracerProvider(tp))
	tracer := tp.Tracer("examples/demo")
	p.note("%d workers, each with its own Client and lockmw.WithHooks(otelhooks.New(...)), take %q and hold it %v",
		timelineWorkers, timelineLock, timelineHold)

	var wg sync.WaitGroup
	errs := make([]error, timelineWorkers)
	for i := range timelineWorkers {
		name := fmt.Sprintf("worker-%d", i+1)
		c := lockmw.New(rdb, lockmw.WithHooks(hooks), withName(name))
		defer c.Close()
		wg.Go(func() {
			// A little apart, so that worker-1 holds first.
			select {
			case <-time.After(time.Duration(i) * 15 * time.Millisecond):
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			errs[i] = timelineWork(ctx, tracer, c, name)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := tp.ForceFlush(ctx); err != nil {
		return err
	}
	spans := mem.GetSpans()
	rows, err := timelineRows(spans)
	if err != nil {
		return err
	}
	if err := checkNoOverlap(spans); err != nil {
		return err
	}
	drawTimeline(p, rows)
	p.summary("%d spans recorded; the %q spans never overlap: one holder at a time", len(spans), workSpanName)
	return nil
}

// timelineWork is one worker's job: take the lock, update the order under
// it, let go.
func timelineWork(ctx context.Context, tracer trace.Tracer, c *lockmw.Client, name string) error {
	ctx, span := tracer.Start(ctx, name)
	defer span.End()
	m := c.Mutex(timelineLock)
	hctx, err := m.Lock(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	_, work := tracer.Start(hctx, workSpanName) // a child of lock.hold
	select {
	case <-time.After(timelineHold):
	case <-hctx.Done():
	}
	work.End()
	if cause := context.Cause(hctx); cause != nil { // the lock was lost, or ctx ended
		_ = m.Unlock(hctx)
		return fmt.Errorf("%s: %w", name, cause)
	}
	if err := m.Unlock(hctx); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// timelineRow is one worker's lock.wait and lock.hold spans.
type timelineRow struct {
	worker     string
	wait, hold tracetest.SpanStub
	linkedTo   string // the worker whose hold the wait span links to
}

// timelineRows finds each worker's spans: its root span is named after it,
// and its lock.wait and lock.hold spans share the root's trace.
func timelineRows(spans tracetest.SpanStubs) ([]*timelineRow, error) {
	byTrace := map[trace.TraceID]*timelineRow{}
	for _, s := range spans {
		if !s.Parent.IsValid() && strings.HasPrefix(s.Name, "worker-") {
			byTrace[s.SpanContext.TraceID()] = &timelineRow{worker: s.Name}
		}
	}
	holderOf := map[trace.SpanID]string{} // lock.hold span -> worker
	for _, s := range spans {
		r := byTrace[s.SpanContext.TraceID()]
		if r == nil {
			continue
		}
		switch s.Name {
		case otelhooks.WaitSpanName:
			r.wait = s
		case otelhooks.HoldSpanName:
			r.hold = s
			holderOf[s.SpanContext.SpanID()] = r.worker
		}
	}
	rows := make([]*timelineRow, 0, len(byTrace))
	for _, r := range byTrace {
		if r.wait.Name == "" || r.hold.Name == "" {
			return nil, fmt.Errorf("%s: its %s or %s span is missing", r.worker, otelhooks.WaitSpanName, otelhooks.HoldSpanName)
		}
		for _, l := range r.wait.Links {
			if w, ok := holderOf[l.SpanContext.SpanID()]; ok {
				r.linkedTo = w
			}
		}
		rows = append(rows, r)
	}
	if len(rows) != timelineWorkers {
		return nil, fmt.Errorf("spans of %d workers, want %d", len(rows), timelineWorkers)
	}
	slices.SortFunc(rows, func(a, b *timelineRow) int { return strings.Compare(a.worker, b.worker) })
	return rows, nil
}

// checkNoOverlap checks that the work spans, done under the lock, never
// overlap.
func checkNoOverlap(spans tracetest.SpanStubs) error {
	var work []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == workSpanName {
			work = append(work, s)
		}
	}
	slices.SortFunc(work, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	for i := 1; i < len(work); i++ {
		if work[i].StartTime.Before(work[i-1].EndTime) {
			return fmt.Errorf("two %q spans overlap: two holders at once", workSpanName)
		}
	}
	if len(work) != timelineWorkers {
		return fmt.Errorf("%d %q spans, want %d", len(work), workSpanName, timelineWorkers)
	}
	return nil
}

// drawTimeline prints one row per worker on a common time scale: '.' while
// it waits, '#' while it holds.
func drawTimeline(p *printer, rows []*timelineRow) {
	var t0, t1 time.Time
	for _, r := range rows {
		if t0.IsZero() || r.wait.StartTime.Before(t0) {
			t0 = r.wait.StartTime
		}
		if r.hold.EndTime.After(t1) {
			t1 = r.hold.EndTime
		}
	}
	col := t1.Sub(t0) / timelineColumns
	p.blank()
	p.note("timeline of %q, %v per column: '.' waiting, '#' holding", timelineLock, col.Round(time.Millisecond))
	for _, r := range rows {
		var b strings.Builder
		for i := range timelineColumns {
			t := t0.Add(col*time.Duration(i) + col/2) // the middle of the column
			switch {
			case !t.Before(r.hold.StartTime) && t.Before(r.hold.EndTime):
				b.WriteByte('#')
			case !t.Before(r.wait.StartTime) && t.Before(r.wait.EndTime):
				b.WriteByte('.')
			default:
				b.WriteByte(' ')
			}
		}
		link := ""
		if r.linkedTo != "" {
			link = ", its wait span links to " + r.linkedTo + "'s hold"
		}
		p.note("%-8s |%s| waited %3dms, held %3dms%s", r.worker, b.String(),
			r.wait.EndTime.Sub(r.wait.StartTime).Milliseconds(), r.hold.EndTime.Sub(r.hold.StartTime).Milliseconds(), link)
	}
}
