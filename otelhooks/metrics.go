package otelhooks

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/go-rlock/rlock/lockmw"
)

// The names of the metrics.
const (
	WaitDurationMetric = "lock.wait.duration" // histogram, s: acquisitions, by lock.name, lock.kind, lock.permits, lock.outcome, lock.reentrant
	HoldDurationMetric = "lock.hold.duration" // histogram, s: ended holds, by lock.name, lock.kind, lock.permits
	RenewalsMetric     = "lock.renewals"      // counter: renewals of one lock, by lock.name, lock.kind, lock.permits, lock.outcome
	LostMetric         = "lock.lost"          // counter: holds lost, by lock.name, lock.kind, lock.permits
	SkipsMetric        = "lock.skips"         // counter: work an adapter skipped, by reason, lock.adapter, lock.name, lock.kind, lock.permits

	// The gauges of a Client (up-down counters), by lock.kind alone.
	ActiveHoldsMetric    = "lock.hold.active"  // holds open
	ActiveWaitsMetric    = "lock.wait.active"  // acquisitions under way (waiters), re-entries excluded
	ActiveRenewalsMetric = "lock.renew.active" // open holds the watchdog renews (no lease)
)

// Bucket boundaries in seconds: waits from a millisecond to a minute, holds up
// to ten minutes. The SDK's default boundaries (0 to 10000) suit milliseconds.
var (
	waitBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	holdBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600}
)

type instruments struct {
	wait     metric.Float64Histogram
	hold     metric.Float64Histogram
	renewals metric.Int64Counter
	lost     metric.Int64Counter
	skips    metric.Int64Counter
	holds    metric.Int64UpDownCounter
	waits    metric.Int64UpDownCounter
	renewing metric.Int64UpDownCounter
}

// newInstruments creates the instruments; one that cannot be created is
// reported to the global error handler and replaced by a no-op.
func newInstruments(m metric.Meter) instruments {
	var in instruments
	var err error
	if in.wait, err = m.Float64Histogram(WaitDurationMetric,
		metric.WithUnit("s"),
		metric.WithDescription("Time from the start of a lock acquisition to acquired, timed out, canceled or failed."),
		metric.WithExplicitBucketBoundaries(waitBuckets...)); err != nil {
		otel.Handle(err)
		in.wait = noop.Float64Histogram{}
	}
	if in.hold, err = m.Float64Histogram(HoldDurationMetric,
		metric.WithUnit("s"),
		metric.WithDescription("Time from a lock's acquisition to its final unlock, its loss or the client's close."),
		metric.WithExplicitBucketBoundaries(holdBuckets...)); err != nil {
		otel.Handle(err)
		in.hold = noop.Float64Histogram{}
	}
	if in.renewals, err = m.Int64Counter(RenewalsMetric,
		metric.WithUnit("{renewal}"),
		metric.WithDescription("Watchdog renewals of one lock, by outcome (renewed, lost, error).")); err != nil {
		otel.Handle(err)
		in.renewals = noop.Int64Counter{}
	}
	if in.lost, err = m.Int64Counter(LostMetric,
		metric.WithUnit("{lock}"),
		metric.WithDescription("Holds that ended without their owner releasing them.")); err != nil {
		otel.Handle(err)
		in.lost = noop.Int64Counter{}
	}
	if in.skips, err = m.Int64Counter(SkipsMetric,
		metric.WithUnit("{skip}"),
		metric.WithDescription("Requests, RPCs, tasks and runs an adapter did not run, by reason (busy, duplicate, refused, error).")); err != nil {
		otel.Handle(err)
		in.skips = noop.Int64Counter{}
	}
	in.holds = newGauge(m, ActiveHoldsMetric, "{hold}", "Holds open: acquired and not yet unlocked, lost or abandoned.")
	in.waits = newGauge(m, ActiveWaitsMetric, "{waiter}", "Acquisitions under way (waiters, queued or trying), re-entries excluded.")
	in.renewing = newGauge(m, ActiveRenewalsMetric, "{hold}", "Holds open that the watchdog renews (held without a lease).")
	return in
}

// newGauge creates an up-down counter; one that cannot be created is
// reported to the global error handler and replaced by a no-op.
func newGauge(m metric.Meter, name, unit, desc string) metric.Int64UpDownCounter {
	g, err := m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		otel.Handle(err)
		return noop.Int64UpDownCounter{}
	}
	return g
}

// The gauges' attributes: lock.kind alone, made once, as the slices Add
// takes (passed with ..., they allocate nothing).
var (
	mutexGauge     = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(mutexKind))}
	semaphoreGauge = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(semaphoreKind))}
	multilockGauge = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(multilockKind))}
	rwmutexGauge   = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(rwmutexKind))}
)

// gaugeAttrs returns the gauges' attributes for the lock info names:
// lock.kind alone. No name, for the series to stay few; no client ID, for a
// restarted process (a new random ID) to keep its series.
func gaugeAttrs(info lockmw.LockInfo) []metric.AddOption {
	switch {
	case info.Permits > 0:
		return semaphoreGauge
	case info.Kind == "" || info.Kind == "mutex":
		return mutexGauge
	case info.Kind == "multilock":
		return multilockGauge
	case info.Kind == "rwmutex":
		return rwmutexGauge
	}
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kindAttr(info)))}
}

// metricName returns the metrics' lock.name attribute of a lock called name
// in group (lockmw.WithGroup; "" for none), and whether there is one: the
// group when there is one, else the name, through WithLockNameFunc, unless
// WithLockNameAttribute(false).
func (t *telemetry) metricName(name, group string) (attribute.KeyValue, bool) {
	if !t.nameAttr {
		return attribute.KeyValue{}, false
	}
	if group != "" {
		name = group
	}
	if t.nameFunc != nil {
		if name = t.nameFunc(name); name == "" {
			return attribute.KeyValue{}, false
		}
	}
	return LockNameKey.String(name), true
}

// metricAttrs returns the metric attributes for the lock info names: extra,
// lock.kind, lock.permits for a semaphore, lock.adapter when an adapter took
// it, and lock.name (see metricName).
func (t *telemetry) metricAttrs(info lockmw.LockInfo, extra ...attribute.KeyValue) metric.MeasurementOption {
	attrs := make([]attribute.KeyValue, 0, len(extra)+4)
	attrs = appendKind(append(attrs, extra...), info)
	if kv, ok := t.metricName(info.Name, info.Group); ok {
		attrs = append(attrs, kv)
	}
	return metric.WithAttributes(attrs...)
}
