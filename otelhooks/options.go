package otelhooks

import (
	"github.com/go-rlock/rlock/internal/construct"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures the hooks made by [New]. New applies the options in
// order, then checks the result once: an invalid value, or a nil Option,
// makes it panic with one line naming the option and the value. Option
// constructors never panic.
type Option func(*config)

type config struct {
	tp          trace.TracerProvider
	mp          metric.MeterProvider
	nameAttr    bool
	nameFunc    func(string) string
	links       bool
	tpSet       bool // WithTracerProvider was given: nil is then an error, not the default
	mpSet       bool // WithMeterProvider was given
	nameFuncSet bool // WithLockNameFunc was given
}

// newConfig applies opts over the defaults, in order, then checks the result
// once; it panics, with one line naming the option and the value, on a nil
// Option or an invalid value.
func newConfig(opts []Option) config {
	c := config{nameAttr: true, links: true}
	c = construct.Apply("otelhooks", "New", c, opts, (*config).invalid)
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	return c
}

// WithTracerProvider sets the provider of the tracer that makes the lock.wait,
// lock.hold and lock.renew spans. The default is the global provider,
// [otel.GetTracerProvider], as it is when New is called (the global provider
// delegates to one set later with otel.SetTracerProvider). A nil tp makes New
// panic:
// omit the option to use the global one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp, c.tpSet = tp, true }
}

// WithMeterProvider sets the provider of the meter that records
// lock.wait.duration, lock.hold.duration, lock.renewals, lock.lost and the
// gauges lock.hold.active, lock.wait.active and lock.renew.active. The
// default is the global provider, [otel.GetMeterProvider], as it is when New is
// called. A nil mp makes New panic: omit the option to use the global one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp, c.mpSet = mp, true }
}

// WithLockNameAttribute sets whether the metrics carry the lock.name
// attribute. The default is true.
//
// The metrics' lock.name is the lock's group ([lockmw.WithGroup]) when it
// has one, else its name. Every distinct value of an attribute is a
// separate time series, so lock names made from IDs ("orders:42",
// "orders:43", ...) can cost a lot in a metrics backend. The adapters whose
// names are per entity give their locks a bounded group (httpmw the route
// pattern, asynqmw the task type), so their metrics stay bounded by default;
// a name a program chose itself (a job, a migration, a shard) is what a
// dashboard groups by, which is why the default is on. Give your own
// per-entity locks a group with lockmw.WithGroup, map values to a few with
// [WithLockNameFunc], or turn the attribute off. The OpenTelemetry SDK also
// caps each instrument at 2000 attribute sets by default and folds the rest
// into one overflow series. Spans always carry the full name, and lock.group
// beside it: they are per event, not per series.
func WithLockNameAttribute(on bool) Option {
	return func(c *config) { c.nameAttr = on }
}

// WithLockNameFunc sets the value of the metrics' lock.name attribute for a
// lock name, for instance its prefix up to ':' so that "orders:42" is counted
// as "orders". f is given the lock's group ([lockmw.WithGroup]) when it has
// one, else its name. An empty result leaves the attribute off for that
// lock. The default is the group or name itself. It has no effect when
// WithLockNameAttribute(false) is given, and does not change the spans. f must
// be safe for concurrent use; a nil f makes New panic.
func WithLockNameFunc(f func(name string) string) Option {
	return func(c *config) { c.nameFunc, c.nameFuncSet = f, true }
}

// invalid describes the first invalid value of c, "" when there is none.
func (c *config) invalid() string {
	switch {
	case c.tpSet && c.tp == nil:
		return "WithTracerProvider(nil): a trace.TracerProvider is required (omit the option for the global one)"
	case c.mpSet && c.mp == nil:
		return "WithMeterProvider(nil): a metric.MeterProvider is required (omit the option for the global one)"
	case c.nameFuncSet && c.nameFunc == nil:
		return "WithLockNameFunc(nil): a func is required (use WithLockNameAttribute(false) to drop the attribute)"
	}
	return ""
}

// WithHolderLinks sets whether holds store their lock.hold span context with
// the lock in Redis, so that waiters' lock.wait spans link to it. The default
// is true. Storing it costs one more script per acquisition, sent in the
// background by the Client's watchdog goroutine right after the acquisition
// (several acquisitions in one pipeline when they come together); turn it off
// for very hot locks whose waits need no link. Waiters still link to holders
// that store it.
func WithHolderLinks(on bool) Option {
	return func(c *config) { c.links = on }
}
