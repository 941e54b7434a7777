package otelhooks_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

// Not parallel: it sets the global providers.
func TestDefaultsAreTheGlobalProvidersAndTheLockName(t *testing.T) {
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	prevTP, prevMP := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(tel.tp)
	otel.SetMeterProvider(tel.mp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetMeterProvider(prevMP)
	})

	c := locktest.New(t, srv.NewClient(), lockmw.WithHooks(otelhooks.New()))
	m := c.Mutex("defaults")
	h, err := m.Lock(t.Context())
	require.NoError(t, err)
	require.NoError(t, m.Unlock(h))

	hold := tel.only(t, otelhooks.HoldSpanName)
	assert.Equal(t, otelhooks.ScopeName, hold.InstrumentationScope().Name)
	assert.Equal(t, otelhooks.Version(), hold.InstrumentationScope().Version)
	assert.EqualValues(t, 1, tel.histCount(t, otelhooks.HoldDurationMetric, otelhooks.LockNameKey.String("defaults")),
		"metrics go to the global meter provider and carry lock.name by default")
}

func TestScopeNameAndVersion(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "github.com/go-rlock/rlock/otelhooks", otelhooks.ScopeName)
	// A test binary of this module is a build of the module itself: "(devel)"
	// or a version stamped from version control, never unknown.
	assert.NotEmpty(t, otelhooks.Version())
}

func TestNilOptionsPanicNamingTheOption(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, "otelhooks: New: nil Option", func() { otelhooks.New(nil) })
	assert.PanicsWithValue(t, "otelhooks: WithTracerProvider(nil): a trace.TracerProvider is required (omit the option for the global one)",
		func() { otelhooks.New(otelhooks.WithTracerProvider(nil)) })
	assert.PanicsWithValue(t, "otelhooks: WithMeterProvider(nil): a metric.MeterProvider is required (omit the option for the global one)",
		func() { otelhooks.New(otelhooks.WithMeterProvider(nil)) })
	assert.PanicsWithValue(t, "otelhooks: WithLockNameFunc(nil): a func is required (use WithLockNameAttribute(false) to drop the attribute)",
		func() { otelhooks.New(otelhooks.WithLockNameFunc(nil)) })
}

// Option constructors never panic: New checks the result of all options.
func TestOptionsPanicInNewOnly(t *testing.T) {
	t.Parallel()
	assert.NotPanics(t, func() {
		_ = otelhooks.WithTracerProvider(nil)
		_ = otelhooks.WithMeterProvider(nil)
		_ = otelhooks.WithLockNameFunc(nil)
	})
}

func TestNewFillsEveryHook(t *testing.T) {
	t.Parallel()
	h := otelhooks.New()
	assert.NotNil(t, h.AcquireStart)
	assert.NotNil(t, h.AcquireEnd)
	assert.NotNil(t, h.HoldStart)
	assert.NotNil(t, h.HoldEnd)
	assert.NotNil(t, h.Metadata)
	assert.NotNil(t, h.Renewal)
}

func TestHolderLinksCanBeTurnedOff(t *testing.T) {
	t.Parallel()
	assert.NotNil(t, otelhooks.New().Metadata, "holder links are on by default")
	assert.NotNil(t, otelhooks.New(otelhooks.WithHolderLinks(true)).Metadata)
	h := otelhooks.New(otelhooks.WithHolderLinks(false))
	assert.Nil(t, h.Metadata, "nothing is stored with the lock")
	assert.NotNil(t, h.AcquireEnd, "waits still link to holders that store it")
}
