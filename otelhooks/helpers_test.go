package otelhooks_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

// patience bounds every wait for something that should happen soon: far
// above what it takes, for a loaded 2-core machine running other tests.
const patience = 30 * time.Second

// renewingWatchdog is the watchdog timeout of the tests that wait for a
// renewal: renewals every 300ms, and a hold survives a stall of most of a
// second on a loaded machine (with 300ms a stall lost the hold, and the
// test waited for a renewal that could not come).
const renewingWatchdog = 900 * time.Millisecond

// telemetry is an in-memory OpenTelemetry SDK: spans go to a recorder,
// metrics to a manual reader.
type telemetry struct {
	rec    *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t testing.TB) *telemetry {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	tel := &telemetry{
		rec:    rec,
		tp:     sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		reader: reader,
		mp:     sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	}
	t.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = tel.mp.Shutdown(context.Background())
	})
	return tel
}

// hooks returns otelhooks on this SDK.
func (tel *telemetry) hooks(opts ...otelhooks.Option) lockmw.Hooks {
	return otelhooks.New(append([]otelhooks.Option{
		otelhooks.WithTracerProvider(tel.tp),
		otelhooks.WithMeterProvider(tel.mp),
	}, opts...)...)
}

// client returns a lockmw Client on rdb with otelhooks on this SDK, closed at
// cleanup.
func (tel *telemetry) client(t testing.TB, rdb redis.UniversalClient, opts ...lockmw.Option) *lockmw.Client {
	t.Helper()
	return locktest.New(t, rdb, append([]lockmw.Option{lockmw.WithHooks(tel.hooks())}, opts...)...)
}

// request starts a span standing for the caller's request.
func (tel *telemetry) request(ctx context.Context, name string) (context.Context, trace.Span) {
	return tel.tp.Tracer("test").Start(ctx, name)
}

// ended returns the ended spans called name.
func (tel *telemetry) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// waitEnded polls until an ended span called name satisfies match, and
// returns it.
func (tel *telemetry) waitEnded(t testing.TB, name string, match func(sdktrace.ReadOnlySpan) bool) sdktrace.ReadOnlySpan {
	t.Helper()
	var found sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, s := range tel.ended(name) {
			if match == nil || match(s) {
				found = s
				return true
			}
		}
		return false
	}, patience, 5*time.Millisecond, "no ended %s span matched", name)
	return found
}

// only returns the one ended span called name.
func (tel *telemetry) only(t testing.TB, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := tel.ended(name)
	require.Len(t, spans, 1, "ended %s spans", name)
	return spans[0]
}

// collect returns the metric called name, or false.
func (tel *telemetry) collect(t testing.TB, name string) (metricdata.Metrics, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				require.Equal(t, otelhooks.ScopeName, sm.Scope.Name)
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// histCount returns how many values the histogram called name recorded with
// all of want among their attributes.
func (tel *telemetry) histCount(t testing.TB, name string, want ...attribute.KeyValue) uint64 {
	t.Helper()
	m, ok := tel.collect(t, name)
	if !ok {
		return 0
	}
	require.Equal(t, "s", m.Unit)
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	var n uint64
	for _, dp := range h.DataPoints {
		if hasAll(dp.Attributes, want) {
			n += dp.Count
		}
	}
	return n
}

// sum returns the total of the counter called name over the data points with
// all of want among their attributes.
func (tel *telemetry) sum(t testing.TB, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := tel.collect(t, name)
	if !ok {
		return 0
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	require.True(t, s.IsMonotonic)
	var n int64
	for _, dp := range s.DataPoints {
		if hasAll(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

// attrSets returns the attribute sets of the data points of the metric called
// name.
func (tel *telemetry) attrSets(t testing.TB, name string) []attribute.Set {
	t.Helper()
	m, ok := tel.collect(t, name)
	require.True(t, ok, "no metric %s", name)
	var out []attribute.Set
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	default:
		t.Fatalf("%s is a %T", name, m.Data)
	}
	return out
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		v, ok := set.Value(kv.Key)
		if !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// attr returns the span attribute called key.
func attr(t testing.TB, s sdktrace.ReadOnlySpan, key attribute.Key) attribute.Value {
	t.Helper()
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value
		}
	}
	t.Fatalf("span %s has no attribute %s; it has %v", s.Name(), key, s.Attributes())
	return attribute.Value{}
}

// hasAttr reports whether the span has an attribute called key.
func hasAttr(s sdktrace.ReadOnlySpan, key attribute.Key) bool {
	return slices.ContainsFunc(s.Attributes(), func(kv attribute.KeyValue) bool { return kv.Key == key })
}

// linkedTo reports whether s links to the span sc.
func linkedTo(s sdktrace.ReadOnlySpan, sc trace.SpanContext) bool {
	return slices.ContainsFunc(s.Links(), func(l sdktrace.Link) bool { return l.SpanContext.Equal(sc) })
}
