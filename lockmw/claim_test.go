package lockmw_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handOver has a hold a's lock on name and b wait for it, queued, then
// releases a: b's Lock returns the hold it was handed. A first round
// subscribes b's client for name: a waiter that subscribes anew tries once
// more when its subscription is confirmed, and that attempt may win the lock
// (with the full TTL) instead of the hand-off.
func handOver(t *testing.T, srv *redistest.Server, a, b *lockmw.Client, name string) context.Context {
	t.Helper()
	require.NoError(t, b.Mutex(name).Unlock(handOnce(t, srv, a, b, name)))
	return handOnce(t, srv, a, b, name)
}

// handOnce is one round of handOver.
func handOnce(t *testing.T, srv *redistest.Server, a, b *lockmw.Client, name string) context.Context {
	t.Helper()
	ctx := testsupport.Ctx(t)
	ha := locktest.MustLock(t, a.Mutex(name), ctx)
	got := make(chan context.Context, 1)
	go func() {
		hb, err := b.Mutex(name).Lock(ctx)
		assert.NoError(t, err)
		got <- hb
	}()
	testsupport.Eventually(t, 10*time.Second, "b queued", func() bool {
		return srv.Client().ZCard(ctx, "rlock_queue:{"+name+"}").Val() == 1
	})
	require.NoError(t, a.Mutex(name).Unlock(ha))
	return testsupport.Recv(t, got, 10*time.Second, "the hand-off")
}

// A hold handed over gets only a claim window of TTL (a tenth of its own);
// its client claims the full TTL when a third of the window has passed, so
// a hold released before then costs no claim round trip.
func TestShortHandedOverHoldIsNotClaimed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var renewed atomic.Int64
	hooks := lockmw.Hooks{Renewal: func(ev lockmw.RenewalEvent) { renewed.Add(int64(len(ev.Locks))) }}
	// A 10-minute watchdog: a 60 s claim window, claimed after 20 s, and no
	// periodic renewal (every 200 s) during the test.
	a := locktest.NewOn(t, srv)
	b := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(10*time.Minute), lockmw.WithHooks(hooks))
	hb := handOver(t, srv, a, b, "short-claim")
	ttl := srv.Client().PTTL(testsupport.Ctx(t), "short-claim").Val()
	assert.LessOrEqual(t, ttl, time.Minute, "handed over with a claim window")
	require.NoError(t, b.Mutex("short-claim").Unlock(hb))
	assert.Zero(t, renewed.Load(), "released before a third of the window: never claimed")
}

// A hold handed over and kept past a third of its claim window is claimed:
// its key gets the full TTL and the hold outlives the window.
func TestLongHandedOverHoldIsClaimed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv) // 30 s watchdog: a 3 s window
	hb := handOver(t, srv, a, b, "long-claim")
	ctx := testsupport.Ctx(t)
	assert.LessOrEqual(t, srv.Client().PTTL(ctx, "long-claim").Val(), 3*time.Second, "handed over with a claim window")
	testsupport.Eventually(t, 20*time.Second, "the claim gives the full TTL", func() bool {
		return srv.Client().PTTL(ctx, "long-claim").Val() > 10*time.Second
	})
	assert.NoError(t, hb.Err(), "the hold outlives its claim window")
	require.NoError(t, b.Mutex("long-claim").Unlock(hb))
}
