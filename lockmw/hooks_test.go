package lockmw_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type hookKey string

// recorder collects hook events.
type recorder struct {
	mu       sync.Mutex
	acquires []lockmw.AcquireEndEvent
	holds    []lockmw.HoldStartEvent
	ends     []lockmw.HoldEndEvent
	endCtx   []context.Context
}

func (r *recorder) hooks(tag string) lockmw.Hooks {
	return lockmw.Hooks{
		AcquireStart: func(ctx context.Context, e lockmw.AcquireStartEvent) context.Context {
			return context.WithValue(ctx, hookKey("acquire"), tag)
		},
		AcquireEnd: func(ctx context.Context, e lockmw.AcquireEndEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if ctx.Value(hookKey("acquire")) != tag {
				panic("AcquireEnd did not get AcquireStart's context")
			}
			r.acquires = append(r.acquires, e)
		},
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.holds = append(r.holds, e)
			return context.WithValue(ctx, hookKey("hold"), tag+"/"+e.Name)
		},
		Metadata: func(ctx context.Context, name string) string {
			v, _ := ctx.Value(hookKey("hold")).(string)
			return "meta:" + v
		},
		HoldEnd: func(ctx context.Context, e lockmw.HoldEndEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ends = append(r.ends, e)
			r.endCtx = append(r.endCtx, ctx)
		},
	}
}

func TestHooks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var ra, rb recorder
	a := locktest.NewOn(t, srv, lockmw.WithHooks(ra.hooks("a")), lockmw.WithWatchdogTimeout(3*time.Second))
	b := locktest.NewOn(t, srv, lockmw.WithHooks(rb.hooks("b")))
	ma, mb := a.Mutex("hooked", lockmw.WithFencing()), b.Mutex("hooked", lockmw.WithFencing())

	h := locktest.MustLock(t, ma, ctx)
	assert.Equal(t, "a/hooked", h.Value(hookKey("hold")), "HoldStart's context is the parent of the hold context")
	inner := locktest.MustLock(t, ma, h)

	// The holder's metadata reaches a waiter with its busy reply.
	testsupport.Eventually(t, 5*time.Second, "metadata stored", func() bool {
		v, _ := srv.Client().HGet(ctx, "hooked", "rlock:meta").Result()
		return v == "meta:a/hooked"
	})
	_, err := mb.TryLock(ctx, 50*time.Millisecond, 0)
	var busy *lockmw.BusyError
	require.ErrorAs(t, err, &busy)
	assert.Equal(t, "meta:a/hooked", busy.Metadata)

	require.NoError(t, ma.Unlock(inner))
	require.NoError(t, ma.Unlock(h))

	hb := locktest.MustLock(t, mb, ctx)
	existed, err := ma.ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, existed)
	_ = mb.Unlock(hb) // lost: b has no watchdog tick before this, so Unlock finds it gone
	ra.mu.Lock()
	defer ra.mu.Unlock()
	rb.mu.Lock()
	defer rb.mu.Unlock()

	require.Len(t, ra.acquires, 2)
	assert.Equal(t, lockmw.OutcomeAcquired, ra.acquires[0].Outcome)
	assert.False(t, ra.acquires[0].Reentrant)
	assert.Positive(t, ra.acquires[0].Token)
	assert.True(t, ra.acquires[1].Reentrant)
	require.Len(t, ra.holds, 1, "a re-entry is no new hold")
	assert.Positive(t, ra.holds[0].Token)
	require.Len(t, ra.ends, 1)
	assert.NoError(t, ra.ends[0].Lost)
	assert.Equal(t, "a/hooked", ra.endCtx[0].Value(hookKey("hold")), "HoldEnd gets HoldStart's context")

	require.Len(t, rb.acquires, 2)
	assert.Equal(t, lockmw.OutcomeTimedOut, rb.acquires[0].Outcome)
	assert.True(t, rb.acquires[0].Waited)
	assert.Equal(t, "meta:a/hooked", rb.acquires[0].HolderMetadata)
	assert.Regexp(t, "^"+a.ID()+":", rb.acquires[0].Holder)
	assert.Equal(t, lockmw.OutcomeAcquired, rb.acquires[1].Outcome)
	require.Len(t, rb.ends, 1)
	assert.ErrorIs(t, rb.ends[0].Lost, lockmw.ErrLockLost)
}

func TestCombineHooks(t *testing.T) {
	t.Parallel()
	var order []string
	mk := func(tag, meta string) lockmw.Hooks {
		return lockmw.Hooks{
			HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
				order = append(order, tag)
				return context.WithValue(ctx, hookKey(tag), true)
			},
			HoldEnd: func(ctx context.Context, e lockmw.HoldEndEvent) {
				assert.Equal(t, true, ctx.Value(hookKey("first")), "the chained context reaches every end hook")
				order = append(order, tag+"-end")
			},
			Metadata: func(context.Context, string) string { return meta },
		}
	}
	h := lockmw.CombineHooks(mk("first", ""), lockmw.Hooks{}, mk("second", "m2"))
	ctx := h.HoldStart(context.Background(), lockmw.HoldStartEvent{})
	assert.Equal(t, true, ctx.Value(hookKey("first")))
	assert.Equal(t, true, ctx.Value(hookKey("second")))
	h.HoldEnd(ctx, lockmw.HoldEndEvent{})
	assert.Equal(t, []string{"first", "second", "first-end", "second-end"}, order)
	assert.Equal(t, "m2", h.Metadata(ctx, "x"), "first non-empty metadata")
	assert.Nil(t, lockmw.CombineHooks().AcquireStart, "unset hooks stay nil and cost nothing")
}
