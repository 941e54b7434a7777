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

	"github.com/go-rlock/rlock/examples/internal/timeline"
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
	rows, err := timeline.Rows(spans)
	if err != nil {
		return err
	}
	if len(rows) != timelineWorkers {
		return fmt.Errorf("spans of %d workers, want %d", len(rows), timelineWorkers)
	}
	if err := checkNoOverlap(spans); err != nil {
		return err
	}
	if err := drawTimeline(p, rows); err != nil {
		return err
	}
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

// checkNoOverlap checks that the work spans, done under the lock, never
// overlap, and that there is one per worker.
func checkNoOverlap(spans tracetest.SpanStubs) error {
	n, err := spansApart(spans, workSpanName)
	if err == nil && n != timelineWorkers {
		err = fmt.Errorf("%d %q spans, want %d", n, workSpanName, timelineWorkers)
	}
	return err
}

// spansApart checks that no two spans named name overlap, and returns how
// many there are.
func spansApart(spans tracetest.SpanStubs, name string) (int, error) {
	var work []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			work = append(work, s)
		}
	}
	slices.SortFunc(work, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	for i := 1; i < len(work); i++ {
		if work[i].StartTime.Before(work[i-1].EndTime) {
			return 0, fmt.Errorf("two %q spans overlap: two holders at once", name)
		}
	}
	return len(work), nil
}

// drawTimeline prints one row per worker on a common time scale: '.' while
// it waits, '#' while it holds.
func drawTimeline(p *printer, rows []*timeline.Row) error {
	var b strings.Builder
	err := timeline.Draw(&b, rows, fmt.Sprintf("  timeline of %q", timelineLock), timeline.Format{
		Columns:   timelineColumns,
		Indent:    "  ",
		NameWidth: 8,
		Link:      ", its wait span links to %s's hold",
	})
	if err != nil {
		return err
	}
	p.blank()
	p.printf("%s", b.String())
	return nil
}
