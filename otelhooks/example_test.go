package otelhooks_test

import (
	"context"
	"fmt"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

// Work done with the hold context appears inside lock.hold; lock.wait and
// lock.hold are children of the caller's span.
func Example() {
	srv, err := redistest.Launch(redistest.Config{}) // a real redis-server
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())

	rdb := srv.Client()

	c := lockmw.New(rdb, lockmw.WithHooks(otelhooks.New(otelhooks.WithTracerProvider(tp))))
	defer c.Close()
	tracer := tp.Tracer("shop")

	ctx, span := tracer.Start(context.Background(), "handle order 42")
	m := c.Mutex("orders:42")
	hctx, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, work := tracer.Start(hctx, "update order 42") // a child of lock.hold
	work.End()
	if err := m.Unlock(hctx); err != nil {
		fmt.Println(err)
		return
	}
	span.End()

	names := map[string]string{}
	for _, s := range rec.Ended() {
		names[s.SpanContext().SpanID().String()] = s.Name()
	}
	for _, s := range rec.Ended() {
		fmt.Printf("%-16s parent: %s\n", s.Name(), names[s.Parent().SpanID().String()])
	}
	// Output:
	// lock.wait        parent: handle order 42
	// update order 42  parent: lock.hold
	// lock.hold        parent: handle order 42
	// handle order 42  parent:
}

// Lock names made from IDs are grouped by their prefix in the metrics, so
// that "orders:42" and "orders:43" are one time series; spans keep the full
// name.
func ExampleWithLockNameFunc() {
	prefix := func(name string) string {
		p, _, _ := strings.Cut(name, ":")
		return p
	}
	hooks := otelhooks.New(otelhooks.WithLockNameFunc(prefix))
	_ = hooks // lockmw.New(rdb, lockmw.WithHooks(hooks))
	fmt.Println(prefix("orders:42"))
	// Output: orders
}
