package otelhooks_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
)

func TestWaitAndHoldSpansAreChildrenOfTheCaller(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := tel.client(t, srv.NewClient())
	m := c.Mutex("orders:42", lockmw.WithFencing())

	ctx, req := tel.request(t.Context(), "request")
	hctx, err := m.Lock(ctx)
	require.NoError(t, err)
	_, work := tel.tp.Tracer("test").Start(hctx, "work under the lock")
	work.End()
	rctx, err := m.Lock(hctx) // a re-entry
	require.NoError(t, err)
	require.NoError(t, m.Unlock(rctx))
	token, ok := m.Token(hctx)
	require.True(t, ok)
	require.NoError(t, m.Unlock(hctx))
	req.End()

	reqSC := req.SpanContext()
	waits := tel.ended(otelhooks.WaitSpanName)
	require.Len(t, waits, 2)
	hold := tel.only(t, otelhooks.HoldSpanName)

	t.Run("lock.wait is a child of the caller's span", func(t *testing.T) {
		w := waits[0]
		assert.Equal(t, reqSC.SpanID(), w.Parent().SpanID())
		assert.Equal(t, reqSC.TraceID(), w.SpanContext().TraceID())
		assert.Equal(t, trace.SpanKindInternal, w.SpanKind())
		assert.Equal(t, "orders:42", attr(t, w, otelhooks.LockNameKey).AsString())
		assert.Equal(t, "acquired", attr(t, w, otelhooks.LockOutcomeKey).AsString())
		assert.False(t, attr(t, w, otelhooks.LockReentrantKey).AsBool())
		assert.False(t, attr(t, w, otelhooks.LockWaitedKey).AsBool())
		assert.Equal(t, token, attr(t, w, otelhooks.LockFencingTokenKey).AsInt64())
		assert.Empty(t, w.Links())
		assert.Equal(t, codes.Unset, w.Status().Code)
		assert.Equal(t, otelhooks.ScopeName, w.InstrumentationScope().Name)
	})
	t.Run("lock.hold is a child of the caller's span and carried in the hold context", func(t *testing.T) {
		assert.Equal(t, reqSC.SpanID(), hold.Parent().SpanID())
		assert.Equal(t, trace.SpanKindInternal, hold.SpanKind())
		assert.True(t, trace.SpanContextFromContext(hctx).Equal(hold.SpanContext()))
		assert.Equal(t, "orders:42", attr(t, hold, otelhooks.LockNameKey).AsString())
		assert.Equal(t, token, attr(t, hold, otelhooks.LockFencingTokenKey).AsInt64())
		assert.Positive(t, token)
		assert.False(t, attr(t, hold, otelhooks.LockLostKey).AsBool())
		assert.Equal(t, codes.Unset, hold.Status().Code)
		assert.False(t, hold.EndTime().Before(waits[1].EndTime()), "the hold ended before the re-entry's wait")
	})
	t.Run("work done with the hold context is a child of lock.hold", func(t *testing.T) {
		w := tel.only(t, "work under the lock")
		assert.Equal(t, hold.SpanContext().SpanID(), w.Parent().SpanID())
	})
	t.Run("a re-entry is a lock.wait inside lock.hold, and no new hold", func(t *testing.T) {
		w := waits[1]
		assert.True(t, attr(t, w, otelhooks.LockReentrantKey).AsBool())
		assert.Equal(t, "acquired", attr(t, w, otelhooks.LockOutcomeKey).AsString())
		assert.Equal(t, hold.SpanContext().SpanID(), w.Parent().SpanID())
	})
	t.Run("an unfenced hold has no fencing token", func(t *testing.T) {
		h, err := c.Mutex("unfenced").Lock(t.Context())
		require.NoError(t, err)
		require.NoError(t, c.Mutex("unfenced").Unlock(h))
		s := tel.waitEnded(t, otelhooks.HoldSpanName, func(s sdktrace.ReadOnlySpan) bool {
			return attr(t, s, otelhooks.LockNameKey).AsString() == "unfenced"
		})
		assert.False(t, hasAttr(s, otelhooks.LockFencingTokenKey))
	})
}

func TestWaiterLinksToTheHolderAcrossClients(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// Two processes: each its own SDK and its own Client.
	telA, telB := newTelemetry(t), newTelemetry(t)
	a := telA.client(t, srv.NewClient())
	b := telB.client(t, srv.NewClient())
	rdb := srv.Client()
	const name = "orders:7"

	actx, areq := telA.request(t.Context(), "request A")
	defer areq.End()
	ahctx, err := a.Mutex(name).Lock(actx)
	require.NoError(t, err)
	holdSC := trace.SpanContextFromContext(ahctx)
	require.True(t, holdSC.IsValid())

	// The holder's span context is written in the background right after the
	// acquisition.
	var meta string
	require.Eventually(t, func() bool {
		meta = rdb.HGet(t.Context(), name, "rlock:meta").Val()
		return meta != ""
	}, patience, 2*time.Millisecond)
	assert.Equal(t, "00-"+holdSC.TraceID().String()+"-"+holdSC.SpanID().String()+"-01", meta)

	t.Run("a waiter that gives up links to the holder", func(t *testing.T) {
		bctx, breq := telB.request(t.Context(), "request B1")
		_, err := b.Mutex(name).TryLock(bctx, 0, 0)
		breq.End()
		require.ErrorIs(t, err, lockmw.ErrNotAcquired)
		var busy *lockmw.BusyError
		require.ErrorAs(t, err, &busy)
		assert.Equal(t, meta, busy.Metadata)

		w := telB.only(t, otelhooks.WaitSpanName)
		assert.Equal(t, breq.SpanContext().SpanID(), w.Parent().SpanID())
		assert.Equal(t, "timeout", attr(t, w, otelhooks.LockOutcomeKey).AsString())
		assert.True(t, attr(t, w, otelhooks.LockWaitedKey).AsBool())
		assert.True(t, strings.HasPrefix(attr(t, w, otelhooks.LockHolderKey).AsString(), a.ID()+":"))
		require.Len(t, w.Links(), 1)
		assert.True(t, w.Links()[0].SpanContext.Equal(holdSC), "link %v, hold %v", w.Links()[0].SpanContext, holdSC)
		assert.Equal(t, codes.Unset, w.Status().Code)
	})

	t.Run("a waiter that waits links to the holder and then holds", func(t *testing.T) {
		bctx, breq := telB.request(t.Context(), "request B2")
		defer breq.End()
		type result struct {
			hctx context.Context
			err  error
		}
		done := make(chan result, 1)
		go func() {
			h, err := b.Mutex(name).Lock(bctx)
			done <- result{h, err}
		}()
		// B is waiting once it is queued.
		require.Eventually(t, func() bool {
			return rdb.ZCard(t.Context(), layout.Mutex(name).Queue).Val() == 1
		}, patience, 2*time.Millisecond)
		require.NoError(t, a.Mutex(name).Unlock(ahctx))

		var r result
		select {
		case r = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("B never got the lock")
		}
		require.NoError(t, r.err)
		defer func() { require.NoError(t, b.Mutex(name).Unlock(r.hctx)) }()

		w := telB.waitEnded(t, otelhooks.WaitSpanName, func(s sdktrace.ReadOnlySpan) bool {
			return attr(t, s, otelhooks.LockOutcomeKey).AsString() == "acquired"
		})
		assert.Equal(t, breq.SpanContext().SpanID(), w.Parent().SpanID())
		assert.True(t, attr(t, w, otelhooks.LockWaitedKey).AsBool())
		assert.True(t, linkedTo(w, holdSC), "B's wait span links to %v; want A's hold span %v", w.Links(), holdSC)

		// A's hold has ended, B's goes on in B's trace.
		aHold := telA.only(t, otelhooks.HoldSpanName)
		assert.True(t, aHold.SpanContext().Equal(holdSC))
		assert.True(t, attr(t, aHold, otelhooks.LockWaitedKey).AsBool() == false)
		bHoldSC := trace.SpanContextFromContext(r.hctx)
		assert.Equal(t, breq.SpanContext().TraceID(), bHoldSC.TraceID())
		assert.NotEqual(t, holdSC.TraceID(), bHoldSC.TraceID())
	})
}

func TestRenewSpansLinkToTheHolds(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := tel.client(t, srv.NewClient(), lockmw.WithWatchdogTimeout(renewingWatchdog))
	m1, m2 := c.Mutex("renewed:1"), c.Mutex("renewed:2")

	start := time.Now()
	h1, err := m1.Lock(t.Context())
	require.NoError(t, err)
	h2, err := m2.Lock(t.Context())
	require.NoError(t, err)
	sc1, sc2 := trace.SpanContextFromContext(h1), trace.SpanContextFromContext(h2)

	// Hold past the watchdog timeout: renewals every 100ms keep the locks.
	var renews []sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		renews = renews[:0]
		for _, s := range tel.ended(otelhooks.RenewSpanName) {
			if linkedTo(s, sc1) && linkedTo(s, sc2) {
				renews = append(renews, s)
			}
		}
		return len(renews) >= 3 && time.Since(start) > 300*time.Millisecond
	}, patience, 5*time.Millisecond)
	for _, m := range []*lockmw.Mutex{m1, m2} {
		held, err := m.IsHeld(map[*lockmw.Mutex]context.Context{m1: h1, m2: h2}[m])
		require.NoError(t, err)
		require.True(t, held, "%s is no longer held", m.Name())
	}
	require.NoError(t, h1.Err())
	require.NoError(t, h2.Err())

	r := renews[0]
	assert.Equal(t, trace.SpanKindInternal, r.SpanKind())
	assert.False(t, r.Parent().IsValid(), "lock.renew is a root span")
	assert.NotEqual(t, sc1.TraceID(), r.SpanContext().TraceID())
	assert.Equal(t, "renewed", attr(t, r, otelhooks.LockOutcomeKey).AsString())
	assert.EqualValues(t, 2, attr(t, r, otelhooks.LockCountKey).AsInt64())
	assert.EqualValues(t, 2, attr(t, r, otelhooks.LockRenewedCountKey).AsInt64())
	assert.EqualValues(t, 0, attr(t, r, otelhooks.LockLostCountKey).AsInt64())
	assert.EqualValues(t, 0, attr(t, r, otelhooks.LockFailedCountKey).AsInt64())
	assert.Len(t, r.Links(), 2, "one script renews both locks: one span")
	for _, l := range r.Links() {
		set := attribute.NewSet(l.Attributes...)
		v, _ := set.Value(otelhooks.LockOutcomeKey)
		assert.Equal(t, "renewed", v.AsString())
		v, _ = set.Value(otelhooks.LockNameKey)
		assert.Contains(t, []string{"renewed:1", "renewed:2"}, v.AsString())
	}
	assert.False(t, r.EndTime().Before(r.StartTime()))

	require.NoError(t, m1.Unlock(h1))
	require.NoError(t, m2.Unlock(h2))
	for _, name := range []string{"renewed:1", "renewed:2"} {
		assert.GreaterOrEqual(t, tel.sum(t, otelhooks.RenewalsMetric,
			otelhooks.LockNameKey.String(name), otelhooks.LockOutcomeKey.String("renewed")), int64(3))
	}
	assert.Zero(t, tel.sum(t, otelhooks.RenewalsMetric, otelhooks.LockOutcomeKey.String("lost")))
	assert.Zero(t, tel.sum(t, otelhooks.LostMetric))
}

func TestLostLockEndsTheHoldSpanWithError(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := tel.client(t, srv.NewClient(), lockmw.WithWatchdogTimeout(renewingWatchdog))
	m := c.Mutex("lost")
	hctx, err := m.Lock(t.Context())
	require.NoError(t, err)
	holdSC := trace.SpanContextFromContext(hctx)

	other := lockmw.New(srv.NewClient())
	defer other.Close()
	existed, err := other.Mutex("lost").ForceUnlock(t.Context())
	require.NoError(t, err)
	require.True(t, existed)

	select {
	case <-hctx.Done():
	case <-time.After(patience):
		t.Fatal("the hold context was not cancelled after the lock was force-unlocked")
	}
	require.ErrorIs(t, context.Cause(hctx), lockmw.ErrLockLost)

	hold := tel.waitEnded(t, otelhooks.HoldSpanName, nil)
	assert.True(t, hold.SpanContext().Equal(holdSC))
	assert.Equal(t, codes.Error, hold.Status().Code)
	assert.Contains(t, hold.Status().Description, "lock lost")
	assert.True(t, attr(t, hold, otelhooks.LockLostKey).AsBool())

	renew := tel.waitEnded(t, otelhooks.RenewSpanName, func(s sdktrace.ReadOnlySpan) bool {
		return attr(t, s, otelhooks.LockOutcomeKey).AsString() == "lost"
	})
	assert.EqualValues(t, 1, attr(t, renew, otelhooks.LockLostCountKey).AsInt64())
	assert.EqualValues(t, 0, attr(t, renew, otelhooks.LockRenewedCountKey).AsInt64())
	assert.True(t, linkedTo(renew, holdSC))
	assert.Equal(t, codes.Unset, renew.Status().Code, "a lost lock is not a failed script")

	require.ErrorIs(t, m.Unlock(hctx), lockmw.ErrLockLost)
	assert.Len(t, tel.ended(otelhooks.HoldSpanName), 1, "the hold span ends once")
	assert.EqualValues(t, 1, tel.sum(t, otelhooks.LostMetric, otelhooks.LockNameKey.String("lost")))
	assert.EqualValues(t, 1, tel.sum(t, otelhooks.RenewalsMetric, otelhooks.LockOutcomeKey.String("lost")))
	assert.EqualValues(t, 1, tel.histCount(t, otelhooks.HoldDurationMetric, otelhooks.LockNameKey.String("lost")))
}

func TestCloseMarksTheHoldSpanClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tel := newTelemetry(t)
	c := lockmw.New(srv.NewClient(), lockmw.WithHooks(tel.hooks()))
	_, err := c.Mutex("closed").Lock(t.Context())
	require.NoError(t, err)
	require.NoError(t, c.Close())

	hold := tel.only(t, otelhooks.HoldSpanName)
	assert.True(t, attr(t, hold, otelhooks.LockClosedKey).AsBool())
	assert.False(t, attr(t, hold, otelhooks.LockLostKey).AsBool())
	assert.Equal(t, codes.Unset, hold.Status().Code)
	assert.Zero(t, tel.sum(t, otelhooks.LostMetric))
}

func TestWaitOutcomes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	holder := locktest.New(t, srv.NewClient())
	hctx, err := holder.Mutex("busy").Lock(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Mutex("busy").Unlock(hctx) })

	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()

	tests := []struct {
		name    string
		rdb     redis.UniversalClient
		ctx     context.Context
		lock    string
		wait    time.Duration
		outcome string
		status  codes.Code
	}{
		{"a free lock is acquired", srv.NewClient(), t.Context(), "free", lockmw.Forever, "acquired", codes.Unset},
		{"a busy lock times out", srv.NewClient(), t.Context(), "busy", 20 * time.Millisecond, "timeout", codes.Unset},
		{"a cancelled context is canceled", srv.NewClient(), cancelled, "free2", lockmw.Forever, "canceled", codes.Unset},
		{"a Redis error is an error", down, t.Context(), "free3", 0, "error", codes.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tel := newTelemetry(t)
			c := tel.client(t, tt.rdb)
			m := c.Mutex(tt.lock)
			h, err := m.TryLock(tt.ctx, tt.wait, 0)
			if tt.outcome == "acquired" {
				require.NoError(t, err)
				require.NoError(t, m.Unlock(h))
			} else {
				require.Error(t, err)
			}
			w := tel.only(t, otelhooks.WaitSpanName)
			assert.Equal(t, tt.outcome, attr(t, w, otelhooks.LockOutcomeKey).AsString())
			assert.Equal(t, tt.status, w.Status().Code)
			if tt.status == codes.Error {
				require.NotEmpty(t, w.Events(), "the error is recorded")
				assert.Equal(t, "exception", w.Events()[0].Name)
			}
			assert.EqualValues(t, 1, tel.histCount(t, otelhooks.WaitDurationMetric,
				otelhooks.LockNameKey.String(tt.lock), otelhooks.LockOutcomeKey.String(tt.outcome),
				otelhooks.LockReentrantKey.Bool(false)))
			if tt.outcome != "acquired" {
				assert.Empty(t, tel.ended(otelhooks.HoldSpanName))
			}
		})
	}
}

func TestMetricsAndTheLockNameOption(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	prefix := func(name string) string { p, _, _ := strings.Cut(name, ":"); return p }
	dropFirst := func(name string) string {
		if strings.HasSuffix(name, "-1") {
			return ""
		}
		return name
	}
	tests := []struct {
		name string
		opts []otelhooks.Option
		want func(lock string) string // the lock.name attribute; "" for none
	}{
		{"by default metrics carry the lock name", nil, func(l string) string { return l }},
		{"WithLockNameAttribute(false) leaves it off",
			[]otelhooks.Option{otelhooks.WithLockNameAttribute(false)}, func(string) string { return "" }},
		{"WithLockNameFunc groups names",
			[]otelhooks.Option{otelhooks.WithLockNameFunc(prefix)}, func(string) string { return "orders" }},
		{"WithLockNameFunc returning empty leaves it off for that name",
			[]otelhooks.Option{otelhooks.WithLockNameFunc(dropFirst)}, dropFirst},
		{"WithLockNameAttribute(false) wins over WithLockNameFunc",
			[]otelhooks.Option{otelhooks.WithLockNameFunc(prefix), otelhooks.WithLockNameAttribute(false)}, func(string) string { return "" }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tel := newTelemetry(t)
			c := locktest.New(t, srv.NewClient(), lockmw.WithHooks(tel.hooks(tt.opts...)), lockmw.WithWatchdogTimeout(renewingWatchdog))
			// Names of their own, for the subtests share a server.
			first, second := fmt.Sprintf("orders:%d-1", i), fmt.Sprintf("orders:%d-2", i)
			for _, lock := range []string{first, second} {
				m := c.Mutex(lock)
				h, err := m.Lock(t.Context())
				require.NoError(t, err)
				if lock == first { // held until a renewal
					require.Eventually(t, func() bool { return len(tel.ended(otelhooks.RenewSpanName)) > 0 }, patience, 5*time.Millisecond)
				}
				require.NoError(t, m.Unlock(h))
			}

			names := func(metric string) []string {
				var out []string
				for _, set := range tel.attrSets(t, metric) {
					v, _ := set.Value(otelhooks.LockNameKey) // "" when absent
					out = append(out, v.AsString())
				}
				slices.Sort(out)
				return slices.Compact(out)
			}
			want := []string{tt.want(first), tt.want(second)}
			slices.Sort(want)
			want = slices.Compact(want)
			assert.Equal(t, want, names(otelhooks.WaitDurationMetric))
			assert.Equal(t, want, names(otelhooks.HoldDurationMetric))
			assert.Len(t, tel.attrSets(t, otelhooks.HoldDurationMetric), len(want))
			assert.Equal(t, []string{tt.want(first)}, names(otelhooks.RenewalsMetric))

			assert.EqualValues(t, 2, tel.histCount(t, otelhooks.WaitDurationMetric, otelhooks.LockOutcomeKey.String("acquired")))
			assert.EqualValues(t, 2, tel.histCount(t, otelhooks.HoldDurationMetric))
			assert.GreaterOrEqual(t, tel.sum(t, otelhooks.RenewalsMetric, otelhooks.LockOutcomeKey.String("renewed")), int64(1))
			_, ok := tel.collect(t, otelhooks.LostMetric)
			assert.False(t, ok, "nothing was lost")
		})
	}
}

func TestCombinedWithUserHooks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)

	// User hooks with spans of their own, which trace.SpanFromContext finds
	// in the contexts otelhooks gets when they run first.
	type userKey struct{}
	type userHoldKey struct{}
	newUser := func(tel *telemetry) (lockmw.Hooks, *userRecord) {
		rec := &userRecord{}
		return lockmw.Hooks{
			AcquireStart: func(ctx context.Context, e lockmw.AcquireStartEvent) context.Context {
				ctx, span := tel.tp.Tracer("user").Start(ctx, "user.acquire")
				return context.WithValue(ctx, userKey{}, span)
			},
			AcquireEnd: func(ctx context.Context, e lockmw.AcquireEndEvent) {
				rec.acquireEnds++
				span, ok := ctx.Value(userKey{}).(trace.Span)
				rec.sawValue = ok
				if ok {
					span.End()
				}
			},
			HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
				rec.holdStartSpan = trace.SpanContextFromContext(ctx)
				ctx, span := tel.tp.Tracer("user").Start(ctx, "user.hold")
				return context.WithValue(ctx, userHoldKey{}, span)
			},
			HoldEnd: func(ctx context.Context, e lockmw.HoldEndEvent) {
				rec.holdEnds++
				if span, ok := ctx.Value(userHoldKey{}).(trace.Span); ok {
					span.End()
				}
			},
			Metadata: func(context.Context, string) string { return "user metadata" },
		}, rec
	}

	check := func(t *testing.T, tel *telemetry, rec *userRecord, c *lockmw.Client, name string, otelFirst bool) {
		t.Helper()
		m := c.Mutex(name)
		h, err := m.Lock(t.Context())
		require.NoError(t, err)
		meta := ""
		require.Eventually(t, func() bool {
			meta = srv.Client().HGet(t.Context(), name, "rlock:meta").Val()
			return meta != ""
		}, patience, 2*time.Millisecond)
		require.NoError(t, m.Unlock(h))

		w := tel.only(t, otelhooks.WaitSpanName)
		assert.Equal(t, "acquired", attr(t, w, otelhooks.LockOutcomeKey).AsString())
		hold := tel.only(t, otelhooks.HoldSpanName)
		assert.False(t, attr(t, hold, otelhooks.LockLostKey).AsBool())
		assert.Len(t, tel.ended("user.acquire"), 1)
		assert.Len(t, tel.ended("user.hold"), 1)
		assert.Equal(t, 1, rec.acquireEnds)
		assert.Equal(t, 1, rec.holdEnds)
		assert.True(t, rec.sawValue)
		assert.EqualValues(t, 1, tel.histCount(t, otelhooks.HoldDurationMetric))
		if otelFirst {
			assert.True(t, rec.holdStartSpan.Equal(hold.SpanContext()), "the user's HoldStart sees lock.hold")
			assert.True(t, strings.HasPrefix(meta, "00-"+hold.SpanContext().TraceID().String()), meta)
			assert.Equal(t, w.SpanContext().SpanID(), tel.only(t, "user.acquire").Parent().SpanID())
		} else {
			assert.Equal(t, "user metadata", meta, "the first non-empty metadata wins")
			assert.Equal(t, tel.only(t, "user.hold").SpanContext().SpanID(), hold.Parent().SpanID())
		}
	}

	t.Run("otelhooks then user hooks with CombineHooks", func(t *testing.T) {
		t.Parallel()
		tel := newTelemetry(t)
		user, rec := newUser(tel)
		c := locktest.New(t, srv.NewClient(), lockmw.WithHooks(lockmw.CombineHooks(tel.hooks(), user)))
		check(t, tel, rec, c, "combined:1", true)
	})
	t.Run("user hooks then otelhooks with two WithHooks", func(t *testing.T) {
		t.Parallel()
		tel := newTelemetry(t)
		user, rec := newUser(tel)
		c := locktest.New(t, srv.NewClient(), lockmw.WithHooks(user), lockmw.WithHooks(tel.hooks()))
		check(t, tel, rec, c, "combined:2", false)
	})
}

type userRecord struct {
	acquireEnds, holdEnds int
	sawValue              bool
	holdStartSpan         trace.SpanContext
}

func TestHooksWithoutTheirSpans(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	h := tel.hooks()
	ctx := t.Context()

	t.Run("metadata that is no traceparent gives no link", func(t *testing.T) {
		for _, meta := range []string{"", "user metadata", "00-00000000000000000000000000000000-0000000000000000-01", "00-abc-def-01"} {
			actx := h.AcquireStart(ctx, lockmw.AcquireStartEvent{LockInfo: lockmw.LockInfo{Name: "x"}})
			h.AcquireEnd(actx, lockmw.AcquireEndEvent{LockInfo: lockmw.LockInfo{Name: "x"}, Outcome: lockmw.OutcomeAcquired, Waited: true, HolderMetadata: meta})
		}
		spans := tel.ended(otelhooks.WaitSpanName)
		require.Len(t, spans, 4)
		for _, s := range spans {
			assert.Empty(t, s.Links())
		}
	})
	t.Run("events with contexts the hooks did not make record metrics and end nothing", func(t *testing.T) {
		before := len(tel.rec.Ended())
		h.AcquireEnd(ctx, lockmw.AcquireEndEvent{LockInfo: lockmw.LockInfo{Name: "y"}, Outcome: lockmw.OutcomeTimedOut})
		h.HoldEnd(ctx, lockmw.HoldEndEvent{LockInfo: lockmw.LockInfo{Name: "y"}, Lost: lockmw.ErrLockLost})
		assert.Empty(t, h.Metadata(ctx, "y"))
		assert.Len(t, tel.rec.Ended(), before)
		assert.EqualValues(t, 1, tel.histCount(t, otelhooks.WaitDurationMetric, otelhooks.LockNameKey.String("y")))
		assert.EqualValues(t, 1, tel.sum(t, otelhooks.LostMetric, otelhooks.LockNameKey.String("y")))
	})
	t.Run("a failed renewal script is an error span with no links for foreign holds", func(t *testing.T) {
		h.Renewal(lockmw.RenewalEvent{
			Locks: []lockmw.RenewedLock{{LockInfo: lockmw.LockInfo{Name: "z"}, Context: ctx, Outcome: lockmw.RenewalFailed}, {LockInfo: lockmw.LockInfo{Name: "z2"}, Outcome: lockmw.RenewalFailed}},
			Err:   errors.New("connection refused"), Duration: time.Millisecond,
		})
		r := tel.only(t, otelhooks.RenewSpanName)
		assert.Equal(t, "error", attr(t, r, otelhooks.LockOutcomeKey).AsString())
		assert.EqualValues(t, 2, attr(t, r, otelhooks.LockFailedCountKey).AsInt64())
		assert.Equal(t, codes.Error, r.Status().Code)
		assert.Empty(t, r.Links())
		assert.Equal(t, time.Millisecond, r.EndTime().Sub(r.StartTime()))
		assert.EqualValues(t, 1, tel.sum(t, otelhooks.RenewalsMetric, otelhooks.LockNameKey.String("z"), otelhooks.LockOutcomeKey.String("error")))
	})
}
