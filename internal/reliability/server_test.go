package reliability_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// span is one critical section seen by a test.
type span struct {
	who        string
	start, end time.Time
}

// TestRedisRestartUnderHeldAndWaitedLocks is scenario 3a: redis-server
// restarts (its data gone) while a lock is held and two other clients wait
// for it. The holder is told of the loss; the waiters resubscribe and take
// the lock one after the other; no goroutine is left behind.
//
// It is not parallel: it checks for leaked goroutines itself.
func TestRedisRestartUnderHeldAndWaitedLocks(t *testing.T) {
	srv := redistest.Start(t)
	ignore := []goleak.Option{goleak.IgnoreCurrent(),
		// the reaper of the restarted redis-server
		goleak.IgnoreAnyFunction("github.com/go-rlock/rlock/internal/redistest.(*Server).startLocked.func1")}
	ctx := testsupport.Ctx(t) // a hang guard: the waits below are judged by what they reach, not by a budget
	const name = "restart"

	var rdbs []*redis.Client
	var clients []*lockmw.Client
	newClient := func(opts ...lockmw.Option) *lockmw.Client {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
		c := lockmw.New(rdb, opts...)
		rdbs, clients = append(rdbs, rdb), append(clients, c)
		return c
	}
	// The holder renews every 200 ms, so it learns of the loss fast. The
	// waiters retry on their own only every 10 s (a third of the default
	// 30 s), so within this test's deadlines they can only get the lock
	// through their subscriptions.
	holder := newClient(lockmw.WithWatchdogTimeout(600 * time.Millisecond))
	hm := holder.Mutex(name)
	hctx, err := hm.Lock(ctx)
	require.NoError(t, err)

	var mu sync.Mutex
	var spans []span
	var wg sync.WaitGroup
	for _, who := range []string{"waiter-1", "waiter-2"} {
		m := newClient().Mutex(name)
		wg.Go(func() {
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang guard, not a time limit
			defer cancel()
			h, err := m.Lock(wctx)
			if !assert.NoError(t, err, who) {
				return
			}
			s := span{who: who, start: time.Now()}
			time.Sleep(100 * time.Millisecond) // the critical section
			s.end = time.Now()
			assert.NoError(t, m.Unlock(h), who)
			mu.Lock()
			spans = append(spans, s)
			mu.Unlock()
		})
	}
	// Both wait in the queue before the restart (two new clients' first
	// round trips: more than 5 s on a loaded machine, where this failed).
	testsupport.Eventually(t, time.Minute, "both waiters queued", func() bool {
		n, err := srv.Client().ZCard(ctx, "rlock_queue:{"+name+"}").Result()
		return err == nil && n == 2
	})

	restarted := time.Now() // the data is gone from the moment the old server stops
	require.NoError(t, srv.Restart())

	testsupport.Recv(t, hctx.Done(), time.Minute, "the holder is told of the loss")
	told := time.Since(restarted)
	assert.ErrorIs(t, context.Cause(hctx), lockmw.ErrLockLost)
	wg.Wait()
	assert.ErrorIs(t, hm.Unlock(hctx), lockmw.ErrLockLost, "the old holder's Unlock")

	require.Len(t, spans, 2, "both waiters got the lock")
	first, second := spans[0], spans[1]
	assert.False(t, second.start.Before(first.end), "one after the other: %v then %v", first, second)
	t.Logf("restart: holder told %v after the restart began; the waiters held the lock %v and %v after it began",
		told.Round(time.Millisecond), first.start.Sub(restarted).Round(time.Millisecond), second.start.Sub(restarted).Round(time.Millisecond))

	// Nothing left behind once the clients are closed.
	for _, c := range clients {
		require.NoError(t, c.Close())
	}
	for _, rdb := range rdbs {
		require.NoError(t, rdb.Close())
	}
	goleak.VerifyNone(t, ignore...)
}

// TestRedisPauseCallsEndOnTime is scenario 3b: while redis-server is frozen
// (SIGSTOP) every call returns a context error when its deadline passes,
// Unlock gives up after the release timeout and can be called again, and
// after the server resumes everything works, the held lock included.
func TestRedisPauseCallsEndOnTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 30*time.Second)
	const (
		deadline       = 300 * time.Millisecond
		releaseTimeout = 500 * time.Millisecond
		slack          = time.Second // scheduling on a loaded machine
	)
	c := lockmw.New(srv.NewClient(), lockmw.WithWatchdogTimeout(3*time.Second), lockmw.WithReleaseTimeout(releaseTimeout))
	defer c.Close()
	other := lockmw.New(srv.NewClient(), lockmw.WithReleaseTimeout(releaseTimeout))
	defer other.Close()
	held := c.Mutex("pause-held")
	hctx, err := held.Lock(ctx)
	require.NoError(t, err)
	kept := c.Mutex("pause-kept") // held through the pause, not unlocked during it
	kctx, err := kept.Lock(ctx)
	require.NoError(t, err)

	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Lock", func(ctx context.Context) error { _, err := c.Mutex("pause-free").Lock(ctx); return err }},
		{"TryLock with a wait", func(ctx context.Context) error {
			_, err := c.Mutex("pause-free-2").TryLock(ctx, time.Minute, 0)
			return err
		}},
		{"TryLock with a lease", func(ctx context.Context) error {
			_, err := c.Mutex("pause-free-3").TryLock(ctx, 0, time.Minute)
			return err
		}},
		{"Lock of a held lock by another client", func(ctx context.Context) error { _, err := other.Mutex("pause-held").Lock(ctx); return err }},
		{"re-entering Lock", func(ctx context.Context) error {
			ictx, cancel := context.WithTimeout(hctx, deadline)
			defer cancel()
			_, err := held.Lock(ictx)
			return err
		}},
		{"IsLocked", func(ctx context.Context) error { _, err := held.IsLocked(ctx); return err }},
		{"TTL", func(ctx context.Context) error { _, err := held.TTL(ctx); return err }},
		{"ForceUnlock", func(ctx context.Context) error { _, err := c.Mutex("pause-force").ForceUnlock(ctx); return err }},
		{"WithLock", func(ctx context.Context) error {
			return lockmw.WithLock(ctx, c.Mutex("pause-withlock"), func(context.Context) error { return nil })
		}},
	}

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	var wg sync.WaitGroup
	for _, tc := range calls {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, deadline)
			defer cancel()
			start := time.Now()
			err := tc.call(cctx)
			took := time.Since(start)
			assert.ErrorIs(t, err, context.DeadlineExceeded, "%s returns the context's error", tc.name)
			assert.Less(t, took, deadline+slack, "%s returns when its deadline passes", tc.name)
		})
	}
	var unlockErr error
	var unlockTook time.Duration
	wg.Go(func() {
		start := time.Now()
		unlockErr = held.Unlock(hctx)
		unlockTook = time.Since(start)
	})
	wg.Wait()
	require.Error(t, unlockErr, "Unlock cannot reach the server")
	assert.ErrorIs(t, unlockErr, context.DeadlineExceeded, "bounded by the release timeout")
	assert.Less(t, unlockTook, releaseTimeout+slack)
	require.NoError(t, srv.Resume())

	// The failed last Unlock ended the hold (renewal stopped, so the lock
	// would expire even without a retry); a second Unlock releases it.
	assert.Error(t, hctx.Err(), "a failed last Unlock ends the hold context")
	assert.NotErrorIs(t, context.Cause(hctx), lockmw.ErrLockLost)
	require.NoError(t, held.Unlock(hctx), "Unlock again after the pause")
	locked, err := held.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	// The other hold outlived the pause, which was shorter than the
	// watchdog timeout.
	assert.NoError(t, context.Cause(kctx), "the hold survived the pause")
	n, err := kept.HoldCount(kctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, kept.Unlock(kctx))
	start := time.Now()
	for _, name := range []string{"pause-held", "pause-free", "pause-free-2", "pause-free-3", "pause-withlock"} {
		require.NoError(t, lockmw.WithLock(ctx, other.Mutex(name), func(context.Context) error { return nil }), name)
	}
	t.Logf("pause: every call returned its context error on time; Unlock gave up after %v; after resume all five names were taken again in %v",
		unlockTook.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
