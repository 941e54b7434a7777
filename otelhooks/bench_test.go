package otelhooks_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

// discard is a span processor that drops ended spans, so that a long
// benchmark does not keep them.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }

// BenchmarkLockUnlock measures an uncontended Lock and Unlock on a real
// redis-server without hooks, with otelhooks on the no-op global providers,
// and with otelhooks on a recording SDK (every span sampled, metrics
// aggregated by a manual reader), with and without holder links.
func BenchmarkLockUnlock(b *testing.B) {
	srv := redistest.Start(b)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discard{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	cases := []struct {
		name string
		opts []lockmw.Option
	}{
		{"hooks=none", nil},
		{"hooks=otelhooks-noop", []lockmw.Option{lockmw.WithHooks(otelhooks.New())}},
		{"hooks=otelhooks-sdk", []lockmw.Option{lockmw.WithHooks(otelhooks.New(
			otelhooks.WithTracerProvider(tp), otelhooks.WithMeterProvider(mp)))}},
		{"hooks=otelhooks-sdk-nolinks", []lockmw.Option{lockmw.WithHooks(otelhooks.New(
			otelhooks.WithTracerProvider(tp), otelhooks.WithMeterProvider(mp), otelhooks.WithHolderLinks(false)))}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			c := lockmw.New(srv.NewClient(), bc.opts...)
			defer c.Close()
			m := c.Mutex("bench")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				h, err := m.Lock(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := m.Unlock(h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHooks measures the hooks alone, without Redis, for one
// uncontended Lock and Unlock: the CPU time otelhooks adds to each.
func BenchmarkHooks(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discard{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	cases := []struct {
		name  string
		hooks lockmw.Hooks
	}{
		{"noop", otelhooks.New()},
		{"sdk", otelhooks.New(otelhooks.WithTracerProvider(tp), otelhooks.WithMeterProvider(mp))},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			h := bc.hooks
			ctx, span := tp.Tracer("bench").Start(context.Background(), "request")
			defer span.End()
			b.ReportAllocs()
			for b.Loop() {
				actx := h.AcquireStart(ctx, lockmw.AcquireStartEvent{LockInfo: lockmw.LockInfo{Name: "bench"}, Wait: lockmw.Forever})
				hctx := h.HoldStart(ctx, lockmw.HoldStartEvent{LockInfo: lockmw.LockInfo{Name: "bench"}, Field: "c:1"})
				_ = h.Metadata(hctx, "bench")
				h.AcquireEnd(actx, lockmw.AcquireEndEvent{LockInfo: lockmw.LockInfo{Name: "bench"}, Outcome: lockmw.OutcomeAcquired, Duration: time.Millisecond})
				h.HoldEnd(hctx, lockmw.HoldEndEvent{LockInfo: lockmw.LockInfo{Name: "bench"}, Duration: time.Millisecond})
			}
		})
	}
}
