package otelhooks_test

import (
	"context"
	"testing"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/otelhooks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestEveryKindLinksTheWaitToItsHolders: a wait on a read-write lock (either
// side), a semaphore's permits or a multi-lock's member links to the
// lock.hold span of every hold it waited for, across Clients, as a mutex's
// does: from the busy reply (a waiter that gives up) and from the hand-off
// (a waiter that is let in).
func TestEveryKindLinksTheWaitToItsHolders(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	metas := func(t *testing.T, key string, n int64) {
		t.Helper()
		testsupport.Eventually(t, patience, "holders' metadata stored", func() bool {
			return rdb.HLen(t.Context(), key).Val() == n
		})
	}
	hold := func(t *testing.T, tel *telemetry, l lockmw.Locker) (context.Context, trace.SpanContext) {
		t.Helper()
		ctx, req := tel.request(t.Context(), "holder")
		t.Cleanup(func() { req.End() })
		h, err := l.Lock(ctx)
		require.NoError(t, err)
		sc := trace.SpanContextFromContext(h)
		require.True(t, sc.IsValid())
		return h, sc
	}
	givesUp := func(t *testing.T, tel *telemetry, l lockmw.Locker, holds ...trace.SpanContext) {
		t.Helper()
		ctx, req := tel.request(t.Context(), "waiter")
		_, err := l.TryLock(ctx, 0, 0)
		req.End()
		require.ErrorIs(t, err, lockmw.ErrNotAcquired)
		kind := lockmw.InfoOf(l).Kind // a multi-lock's members have wait spans of their own
		w := tel.waitEnded(t, otelhooks.WaitSpanName, func(s sdktrace.ReadOnlySpan) bool {
			return s.Parent().SpanID() == req.SpanContext().SpanID() && attr(t, s, otelhooks.LockKindKey).AsString() == kind
		})
		assert.Len(t, w.Links(), len(holds))
		for _, sc := range holds {
			assert.True(t, linkedTo(w, sc), "the wait links to %v; want %v among them", w.Links(), sc)
		}
	}
	letIn := func(t *testing.T, tel *telemetry, l lockmw.Locker, queue string, release func(), holds ...trace.SpanContext) {
		t.Helper()
		ctx, req := tel.request(t.Context(), "waiter let in")
		defer req.End()
		done := make(chan error, 1)
		go func() {
			h, err := l.Lock(ctx)
			if err == nil {
				err = l.Unlock(h)
			}
			done <- err
		}()
		testsupport.Eventually(t, patience, "the waiter queued", func() bool { return rdb.ZCard(t.Context(), queue).Val() == 1 })
		release()
		require.NoError(t, testsupport.Recv(t, done, patience, "the waiter's turn"))
		w := tel.waitEnded(t, otelhooks.WaitSpanName, func(s sdktrace.ReadOnlySpan) bool {
			return s.Parent().SpanID() == req.SpanContext().SpanID()
		})
		for _, sc := range holds {
			assert.True(t, linkedTo(w, sc), "the wait links to %v; want %v among them", w.Links(), sc)
		}
	}

	t.Run("rwmutex", func(t *testing.T) {
		telA, telB, telC := newTelemetry(t), newTelemetry(t), newTelemetry(t)
		a, b, c := telA.client(t, srv.NewClient()), telB.client(t, srv.NewClient()), telC.client(t, srv.NewClient())
		const name = "links:rw"
		k := layout.RWMutex(name)

		wh, wsc := hold(t, telA, a.RWMutex(name))
		metas(t, k.Meta, 1)
		givesUp(t, telB, b.RWMutex(name).RLocker(), wsc)
		letIn(t, telB, b.RWMutex(name).RLocker(), k.Queue, func() { require.NoError(t, a.RWMutex(name).Unlock(wh)) }, wsc)

		r1, sc1 := hold(t, telA, a.RWMutex(name).RLocker())
		r2, sc2 := hold(t, telC, c.RWMutex(name).RLocker())
		metas(t, k.Meta, 2)
		givesUp(t, telB, b.RWMutex(name), sc1, sc2)
		require.NoError(t, c.RWMutex(name).RLocker().Unlock(r2))
		letIn(t, telB, b.RWMutex(name), k.Queue, func() { require.NoError(t, a.RWMutex(name).RLocker().Unlock(r1)) }, sc1)
		metas(t, k.Meta, 0)
	})

	t.Run("semaphore", func(t *testing.T) {
		telA, telB, telC := newTelemetry(t), newTelemetry(t), newTelemetry(t)
		a, b, c := telA.client(t, srv.NewClient()), telB.client(t, srv.NewClient()), telC.client(t, srv.NewClient())
		const name = "links:sem"
		k := layout.Semaphore(name)
		p1, sc1 := hold(t, telA, a.Semaphore(name, 2))
		p2, sc2 := hold(t, telC, c.Semaphore(name, 2))
		metas(t, k.Meta, 2)
		givesUp(t, telB, b.Semaphore(name, 2), sc1, sc2)
		letIn(t, telB, b.Semaphore(name, 2), k.Queue, func() { require.NoError(t, a.Semaphore(name, 2).Unlock(p1)) }, sc1)
		require.NoError(t, c.Semaphore(name, 2).Unlock(p2))
		metas(t, k.Meta, 0)
	})

	t.Run("multilock", func(t *testing.T) {
		telA, telB := newTelemetry(t), newTelemetry(t)
		a, b := telA.client(t, srv.NewClient()), telB.client(t, srv.NewClient())
		h, sc := hold(t, telA, a.Mutex("links:m2"))
		testsupport.Eventually(t, patience, "the holder's metadata stored", func() bool {
			return rdb.HGet(t.Context(), "links:m2", layout.FieldMeta).Val() != ""
		})
		givesUp(t, telB, b.MultiLock(b.Mutex("links:m1"), b.Mutex("links:m2")), sc)
		require.NoError(t, a.Mutex("links:m2").Unlock(h))
	})
}
