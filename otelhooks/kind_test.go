package otelhooks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

// holdUntilRenewed takes l with lockmw.WithLock and keeps it until a
// lock.renew span links to its lock.hold span, so that the hold has wait,
// hold and renew telemetry.
func holdUntilRenewed(t *testing.T, tel *telemetry, l lockmw.Locker) {
	t.Helper()
	err := lockmw.WithLock(t.Context(), l, func(hctx context.Context) error {
		sc := trace.SpanContextFromContext(hctx)
		require.True(t, sc.IsValid(), "the hold context carries the lock.hold span")
		tel.waitEnded(t, otelhooks.RenewSpanName, func(s sdktrace.ReadOnlySpan) bool { return linkedTo(s, sc) })
		return nil
	})
	require.NoError(t, err)
}

func TestSpansAndMetricsTellTheKinds(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tests := []struct {
		name    string
		lock    string
		locker  func(c *lockmw.Client, name string) lockmw.Locker
		kind    string
		permits int64  // 0: no lock.permits attribute
		mode    string // "": no lock.mode attribute
	}{
		{"a semaphore's permit has lock.kind semaphore and its limit", "exports:tenant-1",
			func(c *lockmw.Client, name string) lockmw.Locker { return c.Semaphore(name, 3) }, "semaphore", 3, ""},
		{"a mutex has lock.kind mutex and no lock.permits", "orders:1",
			func(c *lockmw.Client, name string) lockmw.Locker { return c.Mutex(name) }, "mutex", 0, ""},
		{"a read-write lock's read side has lock.kind rwmutex and lock.mode read", "prices:eu",
			func(c *lockmw.Client, name string) lockmw.Locker { return c.RWMutex(name).RLocker() }, "rwmutex", 0, "read"},
		{"a read-write lock's write side has lock.kind rwmutex and lock.mode write", "prices:us",
			func(c *lockmw.Client, name string) lockmw.Locker { return c.RWMutex(name) }, "rwmutex", 0, "write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tel := newTelemetry(t)
			c := tel.client(t, srv.NewClient(), lockmw.WithWatchdogTimeout(renewingWatchdog))
			holdUntilRenewed(t, tel, tt.locker(c, tt.lock))

			checkKind := func(t *testing.T, what string, attrs []attribute.KeyValue) {
				t.Helper()
				set := attribute.NewSet(attrs...)
				kind, _ := set.Value(otelhooks.LockKindKey)
				assert.Equal(t, tt.kind, kind.AsString(), "%s: lock.kind", what)
				permits, ok := set.Value(otelhooks.LockPermitsKey)
				if tt.permits == 0 {
					assert.False(t, ok, "%s: only a semaphore has lock.permits", what)
				} else {
					assert.Equal(t, tt.permits, permits.AsInt64(), "%s: lock.permits", what)
				}
				mode, ok := set.Value(otelhooks.LockModeKey)
				assert.Equal(t, tt.mode != "", ok, "%s: lock.mode only on a read-write lock", what)
				assert.Equal(t, tt.mode, mode.AsString(), "%s: lock.mode", what)
			}
			wait := tel.only(t, otelhooks.WaitSpanName)
			assert.Equal(t, tt.lock, attr(t, wait, otelhooks.LockNameKey).AsString())
			assert.Equal(t, "acquired", attr(t, wait, otelhooks.LockOutcomeKey).AsString())
			checkKind(t, "lock.wait", wait.Attributes())
			hold := tel.only(t, otelhooks.HoldSpanName)
			assert.Equal(t, tt.lock, attr(t, hold, otelhooks.LockNameKey).AsString())
			checkKind(t, "lock.hold", hold.Attributes())
			var links int
			for _, r := range tel.ended(otelhooks.RenewSpanName) {
				assert.False(t, hasAttr(r, otelhooks.LockKindKey), "a renewal script's span is a batch: no lock.kind")
				for _, l := range r.Links() {
					links++
					checkKind(t, "a lock.renew link", l.Attributes)
				}
			}
			assert.Positive(t, links)

			for _, m := range []string{otelhooks.WaitDurationMetric, otelhooks.HoldDurationMetric, otelhooks.RenewalsMetric} {
				sets := tel.attrSets(t, m)
				require.NotEmpty(t, sets, m)
				for _, set := range sets {
					checkKind(t, m, set.ToSlice())
					name, _ := set.Value(otelhooks.LockNameKey)
					assert.Equal(t, tt.lock, name.AsString(), "%s: lock.name", m)
				}
			}
			want := []attribute.KeyValue{otelhooks.LockNameKey.String(tt.lock), otelhooks.LockKindKey.String(tt.kind)}
			if tt.permits > 0 {
				want = append(want, otelhooks.LockPermitsKey.Int64(tt.permits))
			}
			if tt.mode != "" {
				want = append(want, otelhooks.LockModeKey.String(tt.mode))
			}
			assert.EqualValues(t, 1, tel.histCount(t, otelhooks.WaitDurationMetric,
				append(want, otelhooks.LockOutcomeKey.String("acquired"))...))
			assert.EqualValues(t, 1, tel.histCount(t, otelhooks.HoldDurationMetric, want...))
			assert.GreaterOrEqual(t, tel.sum(t, otelhooks.RenewalsMetric,
				append(want, otelhooks.LockOutcomeKey.String("renewed"))...), int64(1))
		})
	}

	t.Run("a permit's wait that times out has lock.kind semaphore and its limit", func(t *testing.T) {
		t.Parallel()
		tel := newTelemetry(t)
		c := tel.client(t, srv.NewClient())
		sem := c.Semaphore("exports:full", 1)
		p, err := sem.Lock(t.Context())
		require.NoError(t, err)
		defer func() { require.NoError(t, sem.Unlock(p)) }()
		_, err = sem.TryLock(t.Context(), 0, 0)
		require.ErrorIs(t, err, lockmw.ErrNotAcquired)

		w := tel.waitEnded(t, otelhooks.WaitSpanName, func(s sdktrace.ReadOnlySpan) bool {
			return attr(t, s, otelhooks.LockOutcomeKey).AsString() == "timeout"
		})
		assert.Equal(t, "semaphore", attr(t, w, otelhooks.LockKindKey).AsString())
		assert.EqualValues(t, 1, attr(t, w, otelhooks.LockPermitsKey).AsInt64())
		assert.True(t, attr(t, w, otelhooks.LockWaitedKey).AsBool())
		assert.EqualValues(t, 1, tel.histCount(t, otelhooks.WaitDurationMetric,
			otelhooks.LockKindKey.String("semaphore"), otelhooks.LockPermitsKey.Int(1), otelhooks.LockOutcomeKey.String("timeout")))
	})

	t.Run("without lock.name, renewals are counted by kind and limit", func(t *testing.T) {
		t.Parallel()
		tel := newTelemetry(t)
		c := locktest.New(t, srv.NewClient(), lockmw.WithHooks(tel.hooks(otelhooks.WithLockNameAttribute(false))),
			lockmw.WithWatchdogTimeout(renewingWatchdog))
		// A mutex and a permit held together: one renewal script renews both.
		err := lockmw.WithLock(t.Context(), c.Mutex("orders:2"), func(context.Context) error {
			holdUntilRenewed(t, tel, c.Semaphore("exports:tenant-2", 2))
			return nil
		})
		require.NoError(t, err)

		renewed := otelhooks.LockOutcomeKey.String("renewed")
		assert.GreaterOrEqual(t, tel.sum(t, otelhooks.RenewalsMetric, renewed, otelhooks.LockKindKey.String("mutex")), int64(1))
		assert.GreaterOrEqual(t, tel.sum(t, otelhooks.RenewalsMetric, renewed,
			otelhooks.LockKindKey.String("semaphore"), otelhooks.LockPermitsKey.Int(2)), int64(1))
		for _, m := range []string{otelhooks.WaitDurationMetric, otelhooks.HoldDurationMetric, otelhooks.RenewalsMetric} {
			for _, set := range tel.attrSets(t, m) {
				assert.False(t, set.HasValue(otelhooks.LockNameKey), "%s has lock.name: %v", m, set.ToSlice())
				kind, _ := set.Value(otelhooks.LockKindKey)
				assert.Contains(t, []string{"mutex", "semaphore"}, kind.AsString(), m)
				assert.Equal(t, kind.AsString() == "semaphore", set.HasValue(otelhooks.LockPermitsKey), m)
			}
		}
		// Bounded: one series per kind and limit (and outcome), whatever the holders.
		assert.Len(t, tel.attrSets(t, otelhooks.HoldDurationMetric), 2)
	})
}

func TestLostPermitsAreCountedAsSemaphores(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	h := tel.hooks()
	ctx := t.Context()
	h.HoldEnd(ctx, lockmw.HoldEndEvent{LockInfo: lockmw.LockInfo{Name: "exports:lost", Permits: 4}, Lost: lockmw.ErrLockLost})
	h.HoldEnd(ctx, lockmw.HoldEndEvent{LockInfo: lockmw.LockInfo{Name: "orders:lost"}, Lost: lockmw.ErrLockLost})
	assert.EqualValues(t, 1, tel.sum(t, otelhooks.LostMetric, otelhooks.LockNameKey.String("exports:lost"),
		otelhooks.LockKindKey.String("semaphore"), otelhooks.LockPermitsKey.Int(4)))
	assert.EqualValues(t, 1, tel.sum(t, otelhooks.LostMetric, otelhooks.LockNameKey.String("orders:lost"),
		otelhooks.LockKindKey.String("mutex")))
	for _, set := range tel.attrSets(t, otelhooks.LostMetric) {
		name, _ := set.Value(otelhooks.LockNameKey)
		assert.Equal(t, name.AsString() == "exports:lost", set.HasValue(otelhooks.LockPermitsKey), set.ToSlice())
	}
}
