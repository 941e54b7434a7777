// Command tracing shows lock contention as OpenTelemetry traces: a few
// workers, each with its own lockmw Client (as if each were its own process),
// take the same lock "orders:42" at almost the same time and hold it for a
// moment. otelhooks records for each worker a lock.wait span, with a link to
// the lock.hold span of the holder it found in its way, and a lock.hold span
// with the work done under the lock inside it.
//
// The spans are printed by the OpenTelemetry stdout exporter, one JSON object
// per line, and also kept in memory, from which a text timeline is drawn at
// the end: one row per worker, '.' while it waits and '#' while it holds, and
// whose hold its wait span links to.
//
// Run it with
//
//	go run ./examples/tracing
//
// It needs nothing installed: without REDIS_ADDR it runs against an embedded
// in-process Redis (see examples/internal/devredis); set
// REDIS_ADDR=host:port to use a real server.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/examples/internal/devredis"
	"github.com/go-rlock/rlock/examples/internal/timeline"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

const (
	lockName = "orders:42"
	workers  = 3
	holdFor  = 150 * time.Millisecond
	columns  = 60
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rdb, closeRedis, err := devredis.Client(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()

	// Spans go to the stdout exporter and to memory, for the timeline.
	stdout, err := stdouttrace.New(stdouttrace.WithWriter(os.Stdout))
	if err != nil {
		return err
	}
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.Empty()), // keeps the printed spans short
		sdktrace.WithSyncer(stdout),
		sdktrace.WithSyncer(mem),
	)
	defer func() { _ = tp.Shutdown(context.Background()) }()
	hooks := otelhooks.New(otelhooks.WithTracerProvider(tp))
	tracer := tp.Tracer("examples/tracing")

	fmt.Printf("# %d workers take %q and hold it %v each; the spans:\n", workers, lockName, holdFor)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for i := range workers {
		name := fmt.Sprintf("worker-%d", i+1)
		c := lockmw.New(rdb, lockmw.WithHooks(hooks), lockmw.WithClientID(name))
		defer c.Close()
		wg.Go(func() {
			// Stagger the starts a little so that worker-1 is the first holder.
			time.Sleep(time.Duration(i) * 20 * time.Millisecond)
			errs[i] = work(ctx, tracer, c, name)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := tp.ForceFlush(ctx); err != nil {
		return err
	}
	fmt.Println()
	return drawTimeline(mem.GetSpans())
}

// work is one worker's job: take the lock, update the order under it, let go.
func work(ctx context.Context, tracer trace.Tracer, c *lockmw.Client, name string) error {
	ctx, span := tracer.Start(ctx, name)
	defer span.End()
	m := c.Mutex(lockName)
	hctx, err := m.Lock(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	_, upd := tracer.Start(hctx, "update order 42") // a child of lock.hold
	time.Sleep(holdFor)
	upd.End()
	return m.Unlock(hctx)
}

// drawTimeline prints one row per worker: '.' while it waits, '#' while it
// holds, on a common time scale.
func drawTimeline(spans tracetest.SpanStubs) error {
	rows, err := timeline.Rows(spans)
	if err != nil {
		return err
	}
	return timeline.Draw(os.Stdout, rows, fmt.Sprintf("# timeline of %q", lockName), timeline.Format{
		Columns:   columns,
		NameWidth: 9,
		Link:      ", wait linked to %s's hold",
	})
}
