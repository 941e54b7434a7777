package otelhooks

import (
	"runtime/debug"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/lockmw"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/go-rlock/rlock/otelhooks"

// The names of the spans.
const (
	WaitSpanName  = "lock.wait"
	HoldSpanName  = "lock.hold"
	RenewSpanName = "lock.renew"
)

// The attributes of the spans and metrics.
const (
	LockNameKey         = attribute.Key("lock.name")          // string: the lock name on spans; on metrics its group when it has one
	LockGroupKey        = attribute.Key("lock.group")         // string: the lock's lockmw.WithGroup, on spans; absent when none
	LockKindKey         = attribute.Key("lock.kind")          // string: "mutex", "semaphore", "rwmutex" or "multilock"
	LockPermitsKey      = attribute.Key("lock.permits")       // int: a semaphore's permits (its limit); absent for a mutex
	LockModeKey         = attribute.Key("lock.mode")          // string: "read" or "write", a read-write lock's side; absent otherwise
	LockOutcomeKey      = attribute.Key("lock.outcome")       // string: lockmw.Outcome or lockmw.RenewalOutcome
	LockReentrantKey    = attribute.Key("lock.reentrant")     // bool: the acquisition re-entered a hold
	LockWaitedKey       = attribute.Key("lock.waited")        // bool: the lock was busy at least once
	LockHolderKey       = attribute.Key("lock.holder")        // string: the holder last seen while waiting, "<clientID>:<ownerID>"
	LockFencingTokenKey = attribute.Key("lock.fencing_token") // int: the hold's fencing token, when fenced
	LockLeaseKey        = attribute.Key("lock.lease")         // float: the lease in seconds, when leased
	LockLeadKey         = attribute.Key("lock.lead")          // bool: true on the lock.wait of a campaign and the lock.hold of a term of lockmw.Lead; absent otherwise
	LockLostKey         = attribute.Key("lock.lost")          // bool: the hold ended without its owner releasing it
	LockClosedKey       = attribute.Key("lock.closed")        // bool: the hold was abandoned by Client.Close
	LockCountKey        = attribute.Key("lock.count")         // int: locks in a renewal script
	LockRenewedCountKey = attribute.Key("lock.renewed_count") // int: locks a renewal script renewed
	LockLostCountKey    = attribute.Key("lock.lost_count")    // int: locks a renewal script found gone
	LockFailedCountKey  = attribute.Key("lock.failed_count")  // int: locks whose renewal failed (script error)
	LockAdapterKey      = attribute.Key("lock.adapter")       // string: the adapter that took the lock (lockmw.LockInfo.Adapter: http, grpc, connect, asynq, river, gocron); absent when none
	LockSkipReasonKey   = attribute.Key("reason")             // string: why an adapter skipped the work (lockmw.SkipReason: busy, duplicate, refused, error)
)

// Version returns the version of the rlock module this package was built
// from, the instrumentation scope's version: "(devel)" in a build of the
// module itself, "" when the build information is missing.
func Version() string { return version() }

var version = sync.OnceValue(func() string {
	const module = "github.com/go-rlock/rlock"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if bi.Main.Path == module {
		return bi.Main.Version
	}
	for _, m := range bi.Deps {
		if m.Path == module {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
})

// New returns lockmw hooks that trace and measure locks with OpenTelemetry:
//
//	c := lockmw.New(rdb, lockmw.WithHooks(otelhooks.New()))
//
// Combine them with hooks of your own with [lockmw.CombineHooks] or by
// passing lockmw.WithHooks more than once; they find their spans through
// context keys of their own, so other hooks may wrap the contexts they
// return. The hooks are safe for concurrent use, and one set may serve
// several Clients. See the package documentation for the spans and metrics.
func New(opts ...Option) lockmw.Hooks {
	c := newConfig(opts)
	t := newTelemetry(c)
	h := lockmw.Hooks{
		AcquireStart: t.acquireStart,
		AcquireEnd:   t.acquireEnd,
		HoldStart:    t.holdStart,
		HoldEnd:      t.holdEnd,
		Renewal:      t.renewal,
		Skip:         t.skip,
	}
	if c.links {
		h.Metadata = t.metadata
	}
	return h
}

// telemetry is one set of hooks: a tracer, the instruments, and the context
// keys under which it keeps its spans.
type telemetry struct {
	tracer   trace.Tracer
	nameAttr bool
	nameFunc func(string) string
	m        instruments
}

func newTelemetry(c config) *telemetry {
	v := Version()
	t := &telemetry{
		tracer:   c.tp.Tracer(ScopeName, trace.WithInstrumentationVersion(v)),
		nameAttr: c.nameAttr,
		nameFunc: c.nameFunc,
	}
	t.m = newInstruments(c.mp.Meter(ScopeName, metric.WithInstrumentationVersion(v)))
	return t
}

// The context keys of one telemetry: its wait span in the context
// AcquireStart returns, its hold span in the one HoldStart returns. They are
// pointer-shaped, so using them allocates nothing.
type (
	waitKey struct{ t *telemetry }
	holdKey struct{ t *telemetry }
)

var spanKind = trace.WithSpanKind(trace.SpanKindInternal)

// The values of lock.kind.
var (
	mutexKind     = LockKindKey.String("mutex")
	semaphoreKind = LockKindKey.String("semaphore")
	multilockKind = LockKindKey.String("multilock")
	rwmutexKind   = LockKindKey.String("rwmutex")
)

// kindAttr is lock.kind of the lock info names: its Kind, or when that is
// empty (an event made by hand) a semaphore when it has permits, else a
// mutex.
func kindAttr(info lockmw.LockInfo) attribute.KeyValue {
	switch info.Kind {
	case "", "mutex", "semaphore":
		if info.Permits > 0 {
			return semaphoreKind
		}
		return mutexKind
	case "multilock":
		return multilockKind
	case "rwmutex":
		return rwmutexKind
	}
	return LockKindKey.String(info.Kind)
}

// appendKind appends to attrs what kind of lock info names: lock.kind, and
// for a semaphore lock.permits (lockmw's Permits, its limit), for a side of
// a read-write lock lock.mode (lockmw's Mode, "read" or "write"); then
// lock.adapter when an adapter took the lock (a closed set: bounded on
// metrics too).
func appendKind(attrs []attribute.KeyValue, info lockmw.LockInfo) []attribute.KeyValue {
	switch {
	case info.Permits > 0:
		attrs = append(attrs, semaphoreKind, LockPermitsKey.Int(info.Permits))
	case info.Mode != "":
		attrs = append(attrs, kindAttr(info), LockModeKey.String(info.Mode))
	default:
		attrs = append(attrs, kindAttr(info))
	}
	return appendAdapter(attrs, info.Adapter)
}

// appendAdapter appends lock.adapter to attrs when adapter is set.
func appendAdapter(attrs []attribute.KeyValue, adapter string) []attribute.KeyValue {
	if adapter == "" {
		return attrs
	}
	return append(attrs, LockAdapterKey.String(adapter))
}

// leadAttr marks the spans of lockmw.Lead's campaigns and terms.
var leadAttr = LockLeadKey.Bool(true)

// appendLead appends lock.lead to a span's attrs when lead is set.
func appendLead(attrs []attribute.KeyValue, lead bool) []attribute.KeyValue {
	if lead {
		return append(attrs, leadAttr)
	}
	return attrs
}

// appendGroup appends lock.group to a span's attrs when the lock has a group.
func appendGroup(attrs []attribute.KeyValue, group string) []attribute.KeyValue {
	if group == "" {
		return attrs
	}
	return append(attrs, LockGroupKey.String(group))
}
