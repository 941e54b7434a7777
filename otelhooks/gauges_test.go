package otelhooks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

var (
	mutexKind     = otelhooks.LockKindKey.String("mutex")
	semaphoreKind = otelhooks.LockKindKey.String("semaphore")
)

// gauge returns the value of the up-down counter called name for lock.kind
// kind (0 when it has no such data point), and checks that lock.kind is its
// only attribute.
func (tel *telemetry) gauge(t testing.TB, name string, kind attribute.KeyValue) int64 {
	t.Helper()
	m, ok := tel.collect(t, name)
	if !ok {
		return 0
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	require.False(t, s.IsMonotonic, "%s is an up-down counter", name)
	var n int64
	for _, dp := range s.DataPoints {
		require.Equal(t, 1, dp.Attributes.Len(), "%s has lock.kind alone: no name, no client ID; got %v", name, dp.Attributes)
		if hasAll(dp.Attributes, []attribute.KeyValue{kind}) {
			n += dp.Value
		}
	}
	return n
}

// gauges returns the three gauges for kind: holds open, waiters, holds the
// watchdog renews.
func (tel *telemetry) gauges(t testing.TB, kind attribute.KeyValue) [3]int64 {
	t.Helper()
	return [3]int64{
		tel.gauge(t, otelhooks.ActiveHoldsMetric, kind),
		tel.gauge(t, otelhooks.ActiveWaitsMetric, kind),
		tel.gauge(t, otelhooks.ActiveRenewalsMetric, kind),
	}
}

func TestGaugesRiseAndFallBackToZero(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c, other := tel.client(t, srv.NewClient()), tel.client(t, srv.NewClient())
	ctx := testsupport.Ctx(t)

	renewed := c.Mutex("renewed")
	hr := locktest.MustLock(t, renewed, ctx)
	inner := locktest.MustLock(t, renewed, hr) // a re-entry: no second hold
	leased, err := c.Mutex("leased").TryLock(ctx, 0, time.Minute)
	require.NoError(t, err)
	sem := c.Semaphore("permits", 2)
	permit, err := sem.Lock(ctx)
	require.NoError(t, err)

	t.Run("holds open, and those the watchdog renews, by kind", func(t *testing.T) {
		assert.Equal(t, [3]int64{2, 0, 1}, tel.gauges(t, mutexKind), "holds, waiters, renewed")
		assert.Equal(t, [3]int64{1, 0, 1}, tel.gauges(t, semaphoreKind), "holds, waiters, renewed")
	})

	waited := make(chan error, 1)
	go func() {
		h, err := other.Mutex("renewed").Lock(ctx)
		if err == nil {
			err = other.Mutex("renewed").Unlock(h)
		}
		waited <- err
	}()
	t.Run("a waiter counts while it waits", func(t *testing.T) {
		testsupport.Eventually(t, patience, "one mutex waiter", func() bool {
			return tel.gauge(t, otelhooks.ActiveWaitsMetric, mutexKind) == 1
		})
	})
	require.NoError(t, renewed.Unlock(inner))
	require.NoError(t, renewed.Unlock(hr))
	require.NoError(t, testsupport.Recv(t, waited, patience, "the waiter's turn"))
	require.NoError(t, c.Mutex("leased").Unlock(leased))
	require.NoError(t, sem.Unlock(permit))

	t.Run("all fall back to 0 after unlock", func(t *testing.T) {
		assert.Equal(t, [3]int64{0, 0, 0}, tel.gauges(t, mutexKind))
		assert.Equal(t, [3]int64{0, 0, 0}, tel.gauges(t, semaphoreKind))
	})
}

func TestGaugesCountWhatTheHooksSawStart(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	h := tel.hooks()
	ctx := context.Background()

	t.Run("a re-entry is no waiter", func(t *testing.T) {
		actx := h.AcquireStart(ctx, lockmw.AcquireStartEvent{LockInfo: lockmw.LockInfo{Name: "x"}, Reentrant: true})
		assert.Zero(t, tel.gauge(t, otelhooks.ActiveWaitsMetric, mutexKind))
		h.AcquireEnd(actx, lockmw.AcquireEndEvent{LockInfo: lockmw.LockInfo{Name: "x"}, Reentrant: true})
		assert.Zero(t, tel.gauge(t, otelhooks.ActiveWaitsMetric, mutexKind))
	})
	t.Run("ends of events they did not see start count nothing", func(t *testing.T) {
		h.AcquireEnd(ctx, lockmw.AcquireEndEvent{LockInfo: lockmw.LockInfo{Name: "y"}, Outcome: lockmw.OutcomeTimedOut})
		h.HoldEnd(ctx, lockmw.HoldEndEvent{LockInfo: lockmw.LockInfo{Name: "y"}})
		assert.Equal(t, [3]int64{0, 0, 0}, tel.gauges(t, mutexKind))
	})
	t.Run("a closed hold is no longer open", func(t *testing.T) {
		hctx := h.HoldStart(ctx, lockmw.HoldStartEvent{LockInfo: lockmw.LockInfo{Name: "z", Permits: 3}})
		assert.Equal(t, [3]int64{1, 0, 1}, tel.gauges(t, semaphoreKind))
		h.HoldEnd(hctx, lockmw.HoldEndEvent{LockInfo: lockmw.LockInfo{Name: "z", Permits: 3}, Lost: lockmw.ErrClosed})
		assert.Equal(t, [3]int64{0, 0, 0}, tel.gauges(t, semaphoreKind))
	})
}
